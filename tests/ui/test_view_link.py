"""A link to any view (ui/view_link.py): parsing and fallbacks of the address's parameters, and the pages
opened from an address (AppTest with ``at.query_params``)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import parse_qs, urlsplit

import pytest
from streamlit.testing.v1 import AppTest

from attention_core.map_names import layers_said
from attention_core.workspaces import WorkspaceStore
from tests.helpers.apptest import chart
from ui import view_link
from ui.view_link import BadParam, check_text

TIMEOUT = 90
ROOT = Path(__file__).resolve().parents[2]
BUNDLED = "Bundled: default model on UCI sentences"


# -- parsing ---------------------------------------------------------------------------------------


def test_a_plain_sentence_is_taken_as_it_is():
    assert check_text("the movie was great, wasn't it?") == "the movie was great, wasn't it?"


@pytest.mark.parametrize(("value", "why"), [
    ("x" * 10_000, "10,000 characters long"),
    ("the <b>movie</b>", "markup"),
    ("<script>alert(1)</script>", "markup"),
    ("click [here](javascript:alert(1))", "markup"),
    ("bell\x07", "control characters"),
    ("   ", "empty"),
])
def test_a_bad_sentence_says_what_is_wrong_and_how_to_fix_it(value, why):
    with pytest.raises(BadParam, match=why) as err:
        check_text(value)
    assert " — " in str(err.value) and err.value.hint


def test_a_layer_is_counted_from_one_and_a_head_may_be_the_average():
    layer = view_link.number("layer", "k_layer", 2, 1, what="layer")
    head = view_link.number("head", "k_head", 4, 4, what="head", extra={"avg": 4})
    assert layer.parse("1") == 0 and layer.parse("2") == 1
    assert head.parse("3") == 2 and head.parse("AVG") == 4
    assert layer.show(1) == "2" and head.show(4) == "avg"
    for bad in ("0", "3", "-1", "two", ""):
        with pytest.raises(BadParam, match="this model has 2 layers — use 1–2"):
            layer.parse(bad)
    with pytest.raises(BadParam, match="use 1–4 or avg"):
        head.parse("9")


def test_a_model_that_pools_by_attention_counts_its_layers_and_the_pooling_map_apart():
    assert layers_said(2, 2) == "2 layers" and layers_said(1, 1) == "1 layer"
    assert layers_said(1, 2) == "1 layer and a pooling attention as layer 2"
    layer = view_link.number("layer", "k_layer", 3, 0, what="layer", said=layers_said(2, 3))
    assert layer.parse("3") == 2
    with pytest.raises(BadParam, match=r"^this model has 2 layers and a pooling attention as layer 3 — use 1–3$"):
        layer.parse("4")


def test_a_choice_takes_its_slugs_only():
    tab = view_link.choice("tab", "k_tab", {"sentence": "One sentence", "heads": "Head knock-out"}, "sentence")
    assert tab.parse("heads") == "Head knock-out" and tab.show("Head knock-out") == "heads"
    assert tab.default == "One sentence"
    with pytest.raises(BadParam, match="use one of sentence, heads"):
        tab.parse("Head knock-out")


def test_a_switch_is_on_or_off():
    grid = view_link.flag("grid", "k_grid")
    assert grid.parse("1") is True and grid.parse("0") is False
    with pytest.raises(BadParam, match="grid=1"):
        grid.parse("yes please")


def test_a_value_in_a_notice_is_plain_and_short():
    assert view_link._plain("a`b\nc") == "a b c"
    shown = view_link._plain("<img src=x onerror=alert(1)>" * 100)
    assert len(shown) < 80 and shown.endswith("(2,800 characters)")


# -- Home opened from an address -------------------------------------------------------------------


def visit(page: str = "app.py", **query: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / page), default_timeout=TIMEOUT)
    at.query_params.update(query)
    at.run()
    assert not at.exception, at.exception
    return at


def query(at: AppTest) -> dict[str, str]:
    return {k: v[0] if isinstance(v, list) else v for k, v in at.query_params.items()}


def notices(at: AppTest) -> list[str]:
    return [i.value for i in at.info if i.value.startswith("The link's")]


def copied_link(at: AppTest) -> dict[str, str]:
    """The parameters of the link in the sidebar's "Copy link to this view"."""
    (box,) = [b for b in at.sidebar.children.values() if b.type == "popover"
              and b.proto.popover.label == "Copy link to this view"]
    (code,) = [c for c in box.children.values() if c.type == "code"]
    return {k: v[0] for k, v in parse_qs(urlsplit(code.value).query).items()}


def copy_box_caption(at: AppTest) -> str:
    (box,) = [b for b in at.sidebar.children.values() if b.type == "popover"
              and b.proto.popover.label == "Copy link to this view"]
    (caption,) = [c for c in box.children.values() if c.type == "caption"]
    return caption.value


def test_the_copy_box_speaks_of_workspaces_and_a_teacher_only_on_a_shared_server(runs_dir, monkeypatch):
    """On one's own machine there is no workspace and no teacher: the box said so all the same."""
    local = copy_box_caption(visit(sentence="the movie was great"))
    assert local == "Opens this page as you see it now. Copy it with the button at its right."
    monkeypatch.setenv("ATTENTION_PLAYGROUND_SHARED", "1")
    shared = copy_box_caption(visit(sentence="the movie was great"))
    assert "not your workspace" in shared and "teacher" in shared


def test_home_opens_on_the_sentence_layer_and_head_of_its_address(runs_dir):
    at = visit(sentence="the movie was great", layer="2", head="3", grid="1")
    assert at.text_input(key="home_text").value == "the movie was great"
    assert at.radio(key="home_layer").value == "Layer 2" and at.radio(key="home_head").value == "Head 3"
    assert at.toggle(key="home_grid_on").value is True
    assert not notices(at)
    assert query(at) == {"sentence": "the movie was great", "layer": "2", "head": "3", "grid": "1"}
    assert copied_link(at) == query(at)


def test_home_with_defaults_keeps_the_address_empty_and_a_change_goes_into_it(runs_dir):
    at = visit()
    assert query(at) == {}
    at.radio(key="home_head").set_value("Head 2").run()
    assert query(at) == {"head": "2"}
    at.text_input(key="home_text").input("i love this fantastic product").run()
    assert query(at) == {"head": "2", "sentence": "i love this fantastic product"}
    at.radio(key="home_head").set_value("Average of heads").run()  # back to the default: out of the address
    assert query(at) == {"sentence": "i love this fantastic product"}


@pytest.mark.parametrize(("param", "value", "why"), [
    ("head", "9", "this model has 4 heads"),
    ("layer", "0", "this model has 2 layers and a pooling attention as layer 3 — use 1–3"),  # 3 maps, 2 layers
    ("sentence", "x" * 10_000, "10,000 characters long"),
    ("sentence", "<img src=x onerror=alert(1)>", "markup"),
    ("run", "gone-run", "no run named 'gone-run'"),
    ("run", "../../etc", "not a run's name"),
    ("run", "![x](http://example.com/a.png)", "not a run's name"),
    ("grid", "maybe", "on/off switch"),
    ("tab", "rollout", "Home has no such parameter"),
])
def test_a_bad_parameter_falls_back_to_the_default_with_one_short_notice(runs_dir, param, value, why):
    at = visit(**{param: value, "layer": "2"} if param != "layer" else {param: value})
    (notice,) = notices(at)
    assert why in notice and f"`{param}=" in notice
    assert len(notice) < 260  # short, the value cut
    assert at.text_input(key="home_text").value == "the food was not good at all"  # the default sentence
    assert at.radio(key="home_head").value == "Average of heads"
    assert at.selectbox(key="home_run").value == BUNDLED
    assert param not in query(at)  # the address is the view again
    if param != "layer":
        assert at.radio(key="home_layer").value == "Layer 2"  # the good ones are kept
    assert not at.exception and not at.error
    assert not at.get("html"), "a parameter is never rendered as HTML"
    assert "](" not in re.sub(r"`[^`]*`", "", notice), "nor as Markdown: a value stays in its code span"


def test_back_and_forward_put_the_address_s_view_back_absent_parameters_to_their_default(runs_dir, monkeypatch):
    at = visit(sentence="the movie was great", head="2")
    at.radio(key="home_layer").set_value("Layer 2").run()
    assert query(at) == {"sentence": "the movie was great", "head": "2", "layer": "2"}
    # Back: the browser reruns the page with the address before (Streamlit: is_history_navigation)
    real = view_link.get_script_run_ctx
    monkeypatch.setattr(view_link, "get_script_run_ctx",
                        lambda: SimpleNamespace(is_history_navigation=True) if real() else None)
    at.query_params.clear()
    at.query_params.update({"head": "2"})
    at.run()
    assert at.radio(key="home_layer").value == "Layer 1"  # absent: the default
    assert at.text_input(key="home_text").value == "the food was not good at all"
    assert at.radio(key="home_head").value == "Head 2"
    assert query(at) == {"head": "2"}


def test_an_address_this_session_wrote_does_not_undo_a_change_made_since(runs_dir):
    at = visit(head="2")
    at.radio(key="home_head").set_value("Head 3").run()
    at.query_params["head"] = "2"  # a click's rerun that left before the browser had the last address
    at.radio(key="home_layer").set_value("Layer 2").run()
    assert at.radio(key="home_head").value == "Head 3" and query(at) == {"head": "3", "layer": "2"}


def test_a_run_of_ones_own_opens_from_its_name(runs_dir):
    runs_dir.mkdir(parents=True)
    shutil.copytree(ROOT / "data" / "default_run", runs_dir / "my-run")
    at = visit(run="my-run", head="1")
    assert at.selectbox(key="home_run").value == "my-run" and not notices(at)
    assert query(at) == {"run": "my-run", "head": "1"}


# -- shared mode: published runs for everyone, private runs for their workspace -----------------------


def test_shared_mode_a_private_run_s_link_opens_in_its_workspace_and_elsewhere_is_as_one_that_does_not_exist(shared):
    """Another workspace's run answers exactly as a run that does not exist: no notice tells which names are taken."""
    store = WorkspaceStore(shared, shared=True)
    (before,) = notices(visit(run="alice-run"))  # nobody has a run of that name yet
    alice = visit()
    token = query(alice)["w"]
    workspace, _ = store.for_token(token)
    workspace.runs_dir.mkdir(parents=True)
    shutil.copytree(ROOT / "data" / "default_run", workspace.runs_dir / "alice-run")
    alice.run().selectbox(key="home_run").set_value("alice-run").run()
    link = copied_link(alice)
    assert link == {"run": "alice-run"}  # no private token: a link is for someone else
    own = visit(w=token, **link)  # her own link, or a browser that remembers her
    assert own.selectbox(key="home_run").value == "alice-run" and not notices(own)
    bob = visit(**link)
    (notice,) = notices(bob)
    assert notice == before and "no run named 'alice-run' in this workspace" in notice
    assert bob.selectbox(key="home_run").value == BUNDLED
    assert bob.subheader[0].value.startswith("Prediction: ")


def test_shared_mode_a_published_run_s_link_works_for_everyone(shared):
    store = WorkspaceStore(shared, shared=True)
    workspace, _ = store.for_token(None)
    workspace.runs_dir.mkdir(parents=True)
    shutil.copytree(ROOT / "data" / "default_run", workspace.runs_dir / "demo")
    published = store.publish(workspace, "demo")
    learner = visit(run="published:demo", layer="2")
    assert learner.selectbox(key="home_run").value == published.choice == "📌 demo — by the teacher"
    assert not notices(learner) and query(learner)["run"] == "published:demo"
    assert copied_link(learner) == {"run": "published:demo", "layer": "2"}
    gone = visit(run="published:nothing")
    assert "no published run is named 'nothing'" in notices(gone)[0]


# -- Inspect and Faithfulness opened from an address --------------------------------------------------


def test_inspect_opens_on_the_tab_method_layer_head_and_epoch_of_its_address(runs_dir):
    at = visit("pages/2_Inspect.py", sentence="the movie was great", tab="time-lapse", method="grad-norm",
               layer="1", head="2", epoch="0")
    assert not notices(at)
    assert at.text_input(key="inspect_text").value == "the movie was great"
    assert at.session_state["inspect_tab"] == "Time-lapse"
    assert at.selectbox(key="inspect_method").value == "grad_norm"
    assert (at.selectbox(key="inspect_tl_layer").value, at.selectbox(key="inspect_tl_head").value) == (0, 1)
    lapse = chart(at, "inspect_time_lapse")
    assert lapse["layout"]["sliders"][0]["active"] == 0 and lapse["layout"]["title"]["text"].startswith("<b>Epoch 0</b>")
    assert query(at) == {"sentence": "the movie was great", "tab": "time-lapse", "method": "grad-norm", "layer": "1",
                         "head": "2", "epoch": "0"}
    at.selectbox(key="inspect_tl_head").set_value(2).run()  # the time-lapse's head: the address's head on that tab
    assert query(at)["head"] == "3"


def test_inspect_opens_a_validation_row_and_a_wrong_one_falls_back(runs_dir):
    at = visit("pages/2_Inspect.py", val="3")
    assert at.radio(key="inspect_source").value == "Pick one from the validation set"
    assert at.selectbox(key="inspect_val_default_run").value == 3
    assert query(at) == {"val": "3"}
    wrong = visit("pages/2_Inspect.py", val="100000", tab="nope", head="avg")
    assert sorted(n.split("`")[1].split("=")[0] for n in notices(wrong)) == ["tab", "val"]
    assert wrong.radio(key="inspect_source").value == "Type a sentence" and query(wrong) == {}


def test_inspect_names_the_pooling_map_when_a_layer_is_out_of_range(runs_dir):
    at = visit("pages/2_Inspect.py", layer="4")
    (notice,) = notices(at)
    assert "`layer=4` was left out: this model has 2 layers and a pooling attention as layer 3 — use 1–3" in notice
    assert at.selectbox(key="inspect_layer").value == 2 and "layer" not in query(at)  # the last map, the default


def test_an_epoch_the_time_lapse_does_not_have_says_so_and_opens_on_the_runs_model(runs_dir):
    at = visit("pages/2_Inspect.py", tab="time-lapse", epoch="6")  # the bundled run keeps epochs 0, 2, 5, 7, 8, 10, 12
    assert any("epoch 6 is not one of this time-lapse's (0, 2, 5, 7, 8, 10, 12): it opens on the run's model, epoch 8."
               in c.value for c in at.caption)
    assert chart(at, "inspect_time_lapse")["layout"]["sliders"][0]["active"] == 4


def test_faithfulness_opens_on_its_tab_heads_off_and_mode(runs_dir):
    at = visit("pages/7_Faithfulness.py", sentence="the movie was great", tab="heads", off="1.2,2.4", mode="uniform")
    assert not notices(at)
    assert at.multiselect(key="faith_heads").value == ["1.2", "2.4"] and at.radio(key="faith_mode").value == "uniform"
    assert at.session_state["faith_tab"] == "Head knock-out"
    assert any("1.2, 2.4 off" in m.value for m in at.markdown)
    at.multiselect(key="faith_heads").unselect("1.2").run()
    assert query(at) == {"sentence": "the movie was great", "tab": "heads", "off": "2.4", "mode": "uniform"}
    bad = visit("pages/7_Faithfulness.py", off="1.2,9.9", mode="<b>x</b>")
    assert len(notices(bad)) == 2 and any("head 9.9 does not exist" in n and "pooling.HEAD" in n for n in notices(bad))
    assert bad.multiselect(key="faith_heads").value == [] and bad.radio(key="faith_mode").value == "zero"


def test_faithfulness_names_the_pooling_heads_and_reads_an_old_link_s_number(runs_dir):
    # the bundled model's third map is its pooling attention: "pooling.1", once written "3.1" (old links keep working)
    at = visit("pages/7_Faithfulness.py", tab="heads", off="3.1,1.2")
    assert not notices(at)
    assert at.multiselect(key="faith_heads").value == ["pooling.1", "1.2"]
    assert any("pooling.1, 1.2 off" in m.value for m in at.markdown)
    at.multiselect(key="faith_heads").unselect("1.2").run()
    assert query(at) == {"tab": "heads", "off": "pooling.1"}  # re-written in the new form
    named = visit("pages/7_Faithfulness.py", tab="heads", off="Pooling.4")
    assert not notices(named) and named.multiselect(key="faith_heads").value == ["pooling.4"]


@pytest.mark.parametrize(("page", "address", "state"), [
    ("pages/1_Train.py", {"dataset": "small", "preset": "seed"},
     {"train_source": "small.csv (the seed post's 39 product reviews)", "train_preset": "Seed (the Julia post)"}),
    ("pages/3_Self_attention.py", {"query": "step", "tab": "sqrt-dk"},
     {"selfattn_query": "step", "selfattn_tab": "3 · Why divide by √d_k"}),
    ("pages/4_Cross_attention_and_masks.py", {"tab": "masks"}, {"cross_tab": "3 · Your sentences and masks"}),
    ("pages/5_Backpropagation.py", {"tab": "backward"}, {"backprop_tab": "(c) the scale in the backward pass"}),
    ("pages/8_Check_yourself.py", {"sentence": "i love this fantastic product"}, {"quiz_text": "i love this fantastic product"}),
])
def test_train_and_the_explainers_open_on_their_main_choice(runs_dir, page, address, state):
    at = visit(page, **address)
    assert not notices(at)
    assert {k: at.session_state[k] for k in state} == state
    assert query(at) == address and copied_link(at) == address


def test_every_page_names_a_parameter_it_does_not_have(runs_dir):
    at = visit("pages/6_Seed_experiment.py", layer="2")
    assert notices(at) == ["The link's `layer=2` was left out: Seed experiment has no such parameter"]
    assert query(at) == {} and copied_link(at) == {}


def test_a_page_switch_keeps_the_view_and_a_link_from_another_page_is_read(runs_dir):
    at = visit(head="3")  # Home, then Inspect with an address of its own, changed since
    at.switch_page("pages/2_Inspect.py")
    at.query_params.clear()
    at.query_params.update({"head": "2"})
    at.run()
    assert at.selectbox(key="inspect_head").value == 1
    at.selectbox(key="inspect_head").set_value(2).run()
    assert query(at) == {"head": "3"}
    at.switch_page("app.py")
    at.query_params.clear()  # the sidebar's link: no parameters
    at.run()
    assert at.radio(key="home_head").value == "Head 3" and query(at) == {"head": "3"}  # Home as it was left
    at.switch_page("pages/2_Inspect.py")
    at.query_params.clear()
    at.query_params.update({"head": "2"})  # e.g. a question's answer linking to the view that shows why
    at.run()
    assert at.selectbox(key="inspect_head").value == 1 and query(at) == {"head": "2"}


def test_the_previous_page_s_parameters_carried_over_by_a_page_switch_are_not_read(runs_dir):
    at = visit(sentence="the movie was great", head="3")  # Home
    at.switch_page("pages/2_Inspect.py").run()  # (AppTest keeps the address across a page switch)
    assert at.text_input(key="inspect_text").value == "the food was not good at all"
    assert at.selectbox(key="inspect_head").value == 4 and not notices(at)  # the average: Inspect's default
    assert query(at) == {}  # Home's parameters dropped


def test_train_opens_the_comparison_of_two_of_ones_runs_and_names_a_run_that_is_not_there(runs_dir):
    """Check yourself's "which run learned faster" links to ``Train?compare=a,b``."""
    runs_dir.mkdir(parents=True)
    for name in ("run-a", "run-b"):
        shutil.copytree(ROOT / "data" / "default_run", runs_dir / name)
    at = visit("pages/1_Train.py", compare="run-a,run-b")
    assert not notices(at)
    assert at.multiselect(key="train_compare").value == ["run-a", "run-b"]
    assert query(at) == {"compare": "run-a,run-b"} and copied_link(at) == {"compare": "run-a,run-b"}
    bad = visit("pages/1_Train.py", compare="run-a,someone-elses")
    assert notices(bad) == ["The link's `compare=run-a,someone-elses` was left out: it names a run that is not in "
                            "your runs — pick two runs in the list below"]
    assert bad.multiselect(key="train_compare").value == [] and query(bad) == {}


def test_a_link_naming_a_default_is_left_as_it_is_until_the_view_changes(runs_dir):
    """Writing a link's own view again (without its defaults) would push a second history entry: Back
    from a followed link would return to the link instead of the page it was followed from."""
    at = visit(layer="1", head="2")  # layer 1 is Home's default
    assert at.radio(key="home_head").value == "Head 2" and not notices(at)
    assert query(at) == {"layer": "1", "head": "2"}  # not rewritten as {"head": "2"}
    at.radio(key="home_layer").set_value("Layer 2").run()
    assert query(at) == {"layer": "2", "head": "2"}
    at.radio(key="home_layer").set_value("Layer 1").run()
    assert query(at) == {"head": "2"}  # a change is written, defaults left out
