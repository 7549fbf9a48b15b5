"""AppTest of the app in shared mode (private workspaces by a link) and in local mode (unchanged)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from attention_core.workspaces import WorkspaceStore, is_token
from tests.helpers.apptest import page_job

TIMEOUT = 90
ROOT = Path(__file__).resolve().parents[2]
TEACHER = "teacher-secret-for-tests"


@pytest.fixture
def root(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("ATTENTION_PLAYGROUND_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("ATTENTION_PLAYGROUND_SHARED", "1")
    monkeypatch.setenv("ATTENTION_PLAYGROUND_TEACHER_TOKEN", TEACHER)
    return tmp_path / "runs"


def visit(**query: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.query_params.update(query)
    at.run()
    assert not at.exception, at.exception
    return at


def token_of(at: AppTest) -> str:
    value = at.query_params["w"]
    token = value[0] if isinstance(value, list) else value
    assert is_token(token)
    return token


def put_run(root: Path, token: str, name: str) -> None:
    """A run saved in the workspace of ``token`` (the bundled run's files)."""
    workspace, _ = WorkspaceStore(root, shared=True).for_token(token)
    workspace.runs_dir.mkdir(parents=True, exist_ok=True)
    shutil.copytree(ROOT / "data" / "default_run", workspace.runs_dir / name)


def models(at: AppTest) -> list[str]:
    return list(at.selectbox(key="home_run").options)


def captions(at: AppTest) -> str:
    return "\n".join(c.value for c in at.caption)


def test_two_visitors_never_see_each_others_runs_and_a_reload_keeps_them(root):
    a = visit()
    token_a = token_of(a)
    assert any(f"?w={token_a}" in c.value for c in a.code)
    put_run(root, token_a, "a-secret")
    assert "keep this link: it opens your runs" in captions(a.run())
    b = visit()
    token_b = token_of(b)
    put_run(root, token_b, "b-own")
    assert token_b != token_a
    assert "a-secret" in models(a.run()) and "b-own" not in models(a)
    assert "b-own" in models(b.run()) and "a-secret" not in models(b)
    again = visit(w=token_a)  # a reload, or the link opened later (nothing of A's is kept in memory)
    assert token_of(again) == token_a and "a-secret" in models(again) and "b-own" not in models(again)


def test_a_link_to_an_empty_workspace_says_it_is_new_and_how_to_get_back(root):
    """A mistyped token is as new as a fresh one: until the workspace holds something, the sidebar does
    not promise that the link opens the learner's runs."""
    a = visit()
    put_run(root, token_of(a), "a-run")
    mistyped = visit(w=token_of(a)[:-1] + ("B" if token_of(a)[-1] != "B" else "C"))
    for empty in (visit(), mistyped):
        text = captions(empty)
        assert "new, empty workspace** (no runs yet)" in text and "check the link you were given" in text
        assert "it opens your runs" not in text and "Remember me" in text
    assert "keep this link: it opens your runs" in captions(visit(w=token_of(a)))
    assert "new, empty workspace** (no runs yet)" not in captions(visit(w=token_of(a)))


@pytest.mark.parametrize("bad", ["../../etc", "x" * 300, "short", "a" * 21 + "/"])
def test_a_malformed_token_is_a_fresh_workspace_not_an_error(root, bad):
    a = visit()
    put_run(root, token_of(a), "a-secret")
    fresh = visit(w=bad)
    assert not fresh.error
    token = token_of(fresh)
    assert token != bad and token != token_of(a)
    assert models(fresh) == models(a) and "a-secret" not in models(fresh)  # the bundled models only (a's list was drawn
    # before its run was put there)
    assert [p.name for p in (root / "workspaces").iterdir()] == [WorkspaceStore(root, shared=True).for_token(token_of(a))[0].key]


def test_a_published_run_shows_for_others_read_only_as_the_teachers_and_unpublishing_is_said(root):
    teacher = visit(teacher=TEACHER)
    token_t = token_of(teacher)
    assert "teacher" not in teacher.query_params  # taken out of the address once read
    put_run(root, token_t, "demo")
    teacher.run()
    assert teacher.selectbox(key="workspace_publish_pick").options == ["demo"]
    teacher.button(key="workspace_publish").click().run()
    assert not teacher.exception and any("Published" in s.value for s in teacher.success)
    label = WorkspaceStore(root, shared=True).for_token(token_t)[0].label
    shown = "📌 demo — by the teacher"  # the teacher's role, not their workspace's label ("learner 1baf31")
    learner = visit()
    assert shown in models(learner) and "demo" not in models(learner)
    assert token_t not in shown and label not in " ".join(models(learner))
    assert not [b for b in learner.button if b.key and b.key.startswith("workspace_")]  # no Publish / Unpublish
    learner.selectbox(key="home_run").set_value(shown).run()
    assert not learner.exception and learner.subheader[0].value.startswith("Prediction: ")
    assert WorkspaceStore(root, shared=True).for_token(token_of(learner))[0].runs_dir.exists() is False  # nothing of theirs
    teacher.button(key="workspace_unpublish_demo").click().run()
    assert shown not in models(learner.run())
    assert [w.value for w in learner.warning] == [
        "The run “demo” was unpublished by the teacher; showing **Bundled: default model on UCI sentences** instead."]
    assert learner.selectbox(key="home_run").value == models(learner)[0] and not learner.exception
    assert not learner.run().warning  # said once: the learner now looks at the bundled model


def test_a_published_run_unpublished_while_a_learner_inspects_it_is_said_on_inspect_too(root):
    teacher = visit(teacher=TEACHER)
    put_run(root, token_of(teacher), "demo")
    teacher.run().button(key="workspace_publish").click().run()
    learner = visit(run="published:demo")
    learner.switch_page("pages/2_Inspect.py").run()
    assert not learner.exception and not learner.warning
    teacher.button(key="workspace_unpublish_demo").click().run()
    learner.run()
    assert not learner.exception, learner.exception
    assert any(w.value.startswith("The run “demo” was unpublished by the teacher") for w in learner.warning)


def test_a_published_run_whose_vectors_moved_cannot_be_relinked_by_a_learner(root, tmp_path):
    """Read-only means the word-vector path too: the relink box would rewrite the shared copy."""
    from attention_core import ModelConfig, TrainConfig, Trainer, dataset_from_lists, save_run
    from attention_core import embeddings as E
    from tests.helpers.tiny_data import LABELS, TEXTS, vectors_file

    first = vectors_file(tmp_path / "v8.txt", 8)
    emb = E.load_embeddings(E.EmbeddingSource("file", str(first)))
    result = Trainer(ModelConfig(n_layers=1, n_heads=2, d_model=8, d_ff=16), TrainConfig(epochs=1, batch_size=4),
                     dataset_from_lists(TEXTS, LABELS), emb).run(name="vectors")
    teacher = visit(teacher=TEACHER)
    workspace, _ = WorkspaceStore(root, shared=True).for_token(token_of(teacher))
    save_run(result, workspace.runs_dir / "vectors")
    teacher.run().button(key="workspace_publish").click().run()
    first.rename(tmp_path / "moved.txt")
    E._load_cached.cache_clear()  # the server was restarted since: the file is not in memory
    E._file_arrays.cache_clear()
    config = (root / "published" / "vectors" / "vocab.json").read_bytes()
    learner = visit()
    shown = next(name for name in models(learner) if name.startswith("📌 vectors"))
    learner.selectbox(key="home_run").set_value(shown).run()
    assert not learner.exception and learner.error[0].value.startswith("This run cannot be loaded")
    assert not [t for t in learner.text_input if t.key == "home_run_relink"]
    assert any("ask them to publish it again" in i.value for i in learner.info)
    assert (root / "published" / "vectors" / "vocab.json").read_bytes() == config


@pytest.mark.parametrize(("url", "link"), [
    ("http://host:8501", "http://host:8501/?w=T"),
    ("http://host:8501/", "http://host:8501/?w=T"),
    ("https://class.example/app/Train?w=old&sentence=x", "https://class.example/app/Train?w=T"),
])
def test_the_private_link_is_the_page_with_the_token_alone(url, link):
    from ui.workspace_views import private_link

    assert private_link(url, "T") == link


def test_a_wrong_teacher_token_gives_no_teacher_panel(root):
    at = visit(teacher="not-the-token")
    assert "teacher" not in at.query_params
    assert not [e for e in at.expander if "Teacher" in e.label]
    assert [e for e in visit(teacher=TEACHER).expander if "Teacher" in e.label]


def test_local_mode_shows_no_link_and_keeps_the_address(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTION_PLAYGROUND_RUNS", str(tmp_path / "runs"))
    monkeypatch.delenv("ATTENTION_PLAYGROUND_SHARED", raising=False)
    shutil.copytree(ROOT / "data" / "default_run", tmp_path / "runs" / "mine")
    at = visit()
    assert "w" not in at.query_params and not any("w=" in c.value for c in at.code)  # (a code box: the view's link)
    assert not any("keep this link" in c.value for c in at.caption)
    assert "mine" in models(at)
    assert not (tmp_path / "runs" / "workspaces").exists()


def test_the_train_page_does_not_show_a_learner_the_workspace_folder(root):
    a = visit()
    token_a = token_of(a)
    put_run(root, token_a, "mine")
    a.switch_page("pages/1_Train.py").run()
    assert not a.exception, a.exception
    key = WorkspaceStore(root, shared=True).for_token(token_a)[0].key
    captions = [c.value for c in a.caption]
    assert any("private workspace" in c for c in captions)
    assert not any(key in c or str(root) in c for c in captions)  # was: "Runs are saved in `<root>/workspaces/<key>`"


def test_a_workspace_at_its_disk_limit_says_what_to_delete_and_loses_nothing(root, monkeypatch):
    """Start is refused before anything is trained or written, naming the run to delete."""
    monkeypatch.setenv("ATTENTION_PLAYGROUND_WORKSPACE_MB", "0.5")  # the bundled run is ~1.3 MB: over at once
    a = visit()
    token_a = token_of(a)
    put_run(root, token_a, "big")
    workspace = WorkspaceStore(root, shared=True).for_token(token_a)[0].runs_dir
    before = sorted(p.name for p in workspace.iterdir())
    a.switch_page("pages/1_Train.py").run()
    a.button[0].click().run()  # the form's Start
    assert not a.exception, a.exception
    assert page_job(a) is None
    message = next(e.value for e in a.error if e.value.startswith("Cannot start"))
    assert "limit" in message and "'big'" in message
    assert sorted(p.name for p in workspace.iterdir()) == before  # nothing trained, nothing saved


AUTH = {"redirect_uri": "http://localhost:8501/oauth2callback", "cookie_secret": "a-test-cookie-secret",
        "client_id": "id", "client_secret": "secret",
        "server_metadata_url": "https://idp.example/.well-known/openid-configuration"}
ADA = {"is_logged_in": True, "iss": "https://idp.example", "sub": "ada-1", "name": "Ada", "email": "ada@school.example",
       "email_verified": True}


def visit_as(user: dict, secrets: dict | None = None, **query: str) -> AppTest:
    """The app for a visitor whose ``st.user`` is ``user``, on a server with ``secrets``."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.secrets.update(secrets or {})
    at.user = dict(user)
    at.query_params.update(query)
    at.run()
    assert not at.exception, at.exception
    return at


def sign_in_buttons(at: AppTest) -> dict[str, str]:
    return {b.key: b.label for b in at.button if b.key and b.key.startswith("workspace_sign_in")}


def test_without_auth_in_secrets_no_sign_in_button(root):
    at = visit_as({"is_logged_in": False})
    assert sign_in_buttons(at) == {} and not [b for b in at.button if b.key == "workspace_sign_out"]
    assert any("keep this link" in c.value for c in at.caption)


def test_a_visitor_not_signed_in_gets_a_sign_in_button_that_calls_st_login(root, monkeypatch):
    import streamlit

    asked = []
    monkeypatch.setattr(streamlit, "login", lambda provider=None: asked.append(provider))
    at = visit_as({"is_logged_in": False}, {"auth": AUTH})
    assert sign_in_buttons(at) == {"workspace_sign_in_": "Sign in"}
    assert any("keep this link" in c.value for c in at.caption)  # until they sign in, the link is their workspace
    at.button(key="workspace_sign_in_").click().run()
    assert not at.exception and asked == [None]  # st.login() with the provider of [auth] itself


def test_one_sign_in_button_per_named_provider(root, monkeypatch):
    import streamlit

    asked = []
    monkeypatch.setattr(streamlit, "login", lambda provider=None: asked.append(provider))
    provider = {k: AUTH[k] for k in ("client_id", "client_secret", "server_metadata_url")}
    auth = {"redirect_uri": AUTH["redirect_uri"], "cookie_secret": "s", "google": provider, "microsoft": provider}
    at = visit_as({"is_logged_in": False}, {"auth": auth})
    assert sign_in_buttons(at) == {"workspace_sign_in_google": "Sign in with google",
                                   "workspace_sign_in_microsoft": "Sign in with microsoft"}
    at.button(key="workspace_sign_in_microsoft").click().run()
    assert asked == ["microsoft"]


def test_a_server_without_authlib_says_how_to_install_it(root, monkeypatch):
    import streamlit.user_info

    monkeypatch.setattr(streamlit.user_info, "is_authlib_installed", lambda: False)
    at = visit_as({"is_logged_in": False}, {"auth": AUTH})
    at.button(key="workspace_sign_in_").click().run()
    assert not at.exception, at.exception
    message = next(e.value for e in at.error if "Authlib" in e.value)
    assert "pip install -e '.[signin]'" in message


def test_a_signed_in_visitor_sees_their_label_and_signs_out(root):
    at = visit_as(ADA, {"auth": AUTH})
    assert any("Signed in as **Ada**" in c.value for c in at.caption)
    assert not any("w=" in c.value for c in at.code) and "w" not in at.query_params  # no link: their identity is the workspace
    assert sign_in_buttons(at) == {}
    at.button(key="workspace_sign_out").click().run()
    assert not at.exception, at.exception
    assert at.user.get("is_logged_in") is False  # st.logout cleared the identity
    at.run()
    assert "workspace_sign_in_" in sign_in_buttons(at) and token_of(at)  # now a visitor with a link


def teacher_panel(at: AppTest) -> bool:
    return any("Teacher" in e.label for e in at.expander)


@pytest.mark.parametrize("verified, teacher", [(True, True), ("true", True), (None, True), (False, False), ("false", False)])
def test_a_signed_in_teacher_is_known_by_a_verified_email(root, monkeypatch, verified, teacher):
    """None: the provider sends no email_verified claim (e.g. Entra ID), and its e-mail is trusted."""
    monkeypatch.setenv("ATTENTION_PLAYGROUND_TEACHER_EMAILS", "bob@school.example, ADA@school.example")
    user = {k: v for k, v in ADA.items() if k != "email_verified"}
    if verified is not None:
        user["email_verified"] = verified
    assert teacher_panel(visit_as(user, {"auth": AUTH})) is teacher


def test_a_teacher_by_email_publishes_and_a_learner_or_a_signed_out_visitor_is_not_one(root):
    secrets = {"auth": AUTH, "teacher_emails": ["ada@school.example"]}
    ada = visit_as(ADA, secrets)
    assert teacher_panel(ada)
    workspace = WorkspaceStore(root, shared=True).for_user(ADA["iss"], ADA["sub"], ADA["name"])
    workspace.runs_dir.mkdir(parents=True)
    shutil.copytree(ROOT / "data" / "default_run", workspace.runs_dir / "demo")
    ada.run()
    ada.button(key="workspace_publish").click().run()
    assert not ada.exception and any("Published" in s.value for s in ada.success)
    assert [r.label for r in WorkspaceStore(root, shared=True).published_runs()] == ["Ada"]
    learner = visit_as({**ADA, "sub": "cy-2", "name": "Cy", "email": "cy@school.example"}, secrets)
    assert not teacher_panel(learner) and "📌 demo — by the teacher (Ada)" in models(learner)
    ada.button(key="workspace_sign_out").click().run()
    assert not teacher_panel(ada.run())


def test_a_malformed_teacher_email_setting_stops_the_page_with_its_fix(root, monkeypatch):
    monkeypatch.setenv("ATTENTION_PLAYGROUND_TEACHER_EMAILS", "ada@school.example, bob")
    at = visit_as(ADA, {"auth": AUTH})
    message = at.error[0].value
    assert "workspace settings are wrong" in message and "'bob'" in message and "ATTENTION_PLAYGROUND_TEACHER_EMAILS" in message
    assert not teacher_panel(at)


COOKIE = "attention_playground_workspace"


def scripts(at: AppTest) -> list[str]:
    return [h.proto.body for h in at.get("html") if "<script>" in h.proto.body]


def with_cookies(monkeypatch, cookies: dict[str, str]) -> None:
    """The cookies the browser sent with the tab's first request (AppTest sends none)."""
    from streamlit.runtime.context import ContextProxy

    monkeypatch.setattr(ContextProxy, "cookies", property(lambda self: cookies))


def test_the_link_says_a_new_tab_without_it_opens_a_new_empty_workspace(root):
    at = visit()
    put_run(root, token_of(at), "mine")
    at.run()
    assert any("a new tab without this link opens a new, empty workspace" in c.value for c in at.caption)
    assert at.checkbox(key="workspace_remember").value is False and not scripts(at)  # opt-in: no cookie by default


def test_remember_me_writes_the_token_in_a_cookie_and_unticking_removes_only_that_one(root):
    at = visit()
    token = token_of(at)
    put_run(root, token, "mine")
    at.checkbox(key="workspace_remember").check().run()
    [script] = scripts(at)
    assert f'document.cookie = "{COOKIE}={token}; Max-Age=2592000; Path=/; SameSite=Strict"' in script
    assert '"https:" ? "; Secure"' in script
    assert any("this browser opens them in a new tab too" in c.value for c in at.caption)
    at.checkbox(key="workspace_remember").uncheck().run()
    [script] = scripts(at)
    assert f'includes("{COOKIE}={token}")' in script and f'"{COOKIE}=; Max-Age=0' in script


def test_a_remembered_browser_opens_its_workspace_in_a_new_tab_and_a_link_still_wins(root, monkeypatch):
    a = visit()
    token_a = token_of(a)
    put_run(root, token_a, "a-run")
    with_cookies(monkeypatch, {COOKIE: token_a})
    bare = visit()  # a new tab, no link: the remembered workspace
    assert token_of(bare) == token_a and "a-run" in models(bare)
    assert bare.checkbox(key="workspace_remember").value is True
    other = visit(w="B" * 22)  # another workspace's link: that one, and the cookie is left alone
    assert token_of(other) == "B" * 22 and "a-run" not in models(other)
    assert other.checkbox(key="workspace_remember").value is False and not scripts(other)


@pytest.mark.parametrize("cookie", ["../../etc", "short", "a" * 21 + "/"])
def test_a_malformed_remembered_token_is_a_new_workspace(root, monkeypatch, cookie):
    with_cookies(monkeypatch, {COOKIE: cookie})
    at = visit()
    assert token_of(at) != cookie and not at.error
    assert at.checkbox(key="workspace_remember").value is False


def bomb_of_a_run(padding_mb: int) -> bytes:
    """A run's zip that loads, whose history.json ends in ``padding_mb`` MB of spaces: tiny once
    compressed, that much larger once unpacked."""
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in ("config.json", "vocab.json", "model.safetensors"):
            zf.write(ROOT / "data" / "default_run" / name, arcname=name)
        history = (ROOT / "data" / "default_run" / "history.json").read_bytes()
        zf.writestr("history.json", history + b" " * (padding_mb * 1024 * 1024))
    return buf.getvalue()


def test_a_run_zip_is_measured_by_its_unpacked_size_against_the_disk_limit(root, monkeypatch):
    """The zip is 1.3 MB and fits a 4 MB limit; unpacked it is 21.6 MB: refused, nothing written."""
    data = bomb_of_a_run(20)
    assert len(data) < 2 * 1024 * 1024
    monkeypatch.setenv("ATTENTION_PLAYGROUND_WORKSPACE_MB", "4")
    a = visit()
    workspace = WorkspaceStore(root, shared=True).for_token(token_of(a))[0].runs_dir
    a.switch_page("pages/1_Train.py").run()
    a.file_uploader(key="train_run_upload").upload("padded.zip", data, "application/zip").run()
    assert not a.exception, a.exception
    message = next(e.value for e in a.error if e.value.startswith("Cannot upload padded.zip"))
    assert "limit is 4 MB" in message
    assert not workspace.exists() or not any(workspace.iterdir())  # nothing unpacked, not even a temporary folder
    monkeypatch.setenv("ATTENTION_PLAYGROUND_WORKSPACE_MB", "30")  # room for it: the same zip is taken
    a.file_uploader(key="train_run_upload").upload("padded2.zip", data, "application/zip").run()
    assert any(s.value.startswith("Uploaded run 'padded2'") for s in a.success)
