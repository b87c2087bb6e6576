"""The memory inspector (/ui) in process: login, sessions, CSRF, scopes, headers, two stages.

The browser tests over a real uvicorn process are in
``tests/integration_tests/service/test_ui_browser.py``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from langchain_chroma import Chroma
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from cogito_lc import MemoryStore
from cogito_lc.service import server
from cogito_lc.service.config import CogitoSettings
from cogito_lc.service.server import create_app
from cogito_lc.service.ui import CONTENT_SECURITY_POLICY
from cogito_lc.service.ui import _sessions as sessions_module
from cogito_lc.service.ui import _views as ui_views
from cogito_lc.service.ui._sessions import MAX_FAILED_LOGINS, LoginLimiter

TOKEN = "unit-inspector-token"  # noqa: S105 - a test value


def _settings(tmp_path: Path, **values: Any) -> CogitoSettings:
    return CogitoSettings(store_path=tmp_path / "store", api_token=TOKEN, **values)


@pytest.fixture
def memory(chroma: Chroma) -> MemoryStore:
    return MemoryStore(chroma, scope={"user_id": "agent"})


def _login(client: TestClient, **form: str) -> Any:
    page = client.get("/ui/login")
    nonce = re.search(r'name="nonce" value="([^"]+)"', page.text)
    assert nonce is not None
    return client.post("/ui/login", data={"nonce": nonce.group(1), **form}, follow_redirects=False)


def _csrf(client: TestClient, path: str) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', client.get(path).text)
    assert found is not None
    return found.group(1)


@pytest.fixture
def client(tmp_path: Path, memory: MemoryStore) -> Iterator[TestClient]:
    app = create_app(_settings(tmp_path, allow_request_scope=True), memory=memory)
    with TestClient(app, raise_server_exceptions=False, base_url="http://127.0.0.1") as test_client:
        yield test_client


def test_pages_need_a_session_and_the_api_still_needs_the_token(client: TestClient) -> None:
    answer = client.get("/ui/memories", follow_redirects=False)
    assert answer.status_code == 303
    assert answer.headers["location"] == "/ui/login"
    assert answer.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert client.get("/memories").status_code == 401
    wrong = "wrong-token-wrong-token"
    assert _login(client, token=wrong).status_code == 401
    login = _login(client, token=TOKEN)
    assert login.status_code == 303
    cookie = login.headers["set-cookie"]
    assert "HttpOnly" in cookie
    assert "SameSite=strict" in cookie
    assert TOKEN not in cookie
    assert client.get("/memories").status_code == 401  # the cookie is no API token
    assert client.get("/ui/scopes").status_code == 200


def test_a_partial_request_without_a_session_sends_the_whole_page_to_the_login(
    client: TestClient,
) -> None:
    answer = client.get("/ui/memories?page=2", headers={"HX-Request": "true"})

    assert answer.status_code == 204
    assert answer.headers["hx-redirect"] == "/ui/login"


def test_the_login_form_itself_needs_its_nonce(client: TestClient) -> None:
    client.get("/ui/login")
    answer = client.post("/ui/login", data={"token": TOKEN}, follow_redirects=False)
    assert answer.status_code == 403


def test_state_changing_requests_need_the_csrf_token(
    client: TestClient, memory: MemoryStore
) -> None:
    memory_id = memory.store("Auth tokens expire after 3600 s.").id
    _login(client, token=TOKEN)
    path = f"/ui/delete?id={memory_id}"
    csrf = _csrf(client, path)
    assert client.post(path, data={}).status_code == 403
    assert client.post(path, data={"csrf_token": csrf[:-1]}).status_code == 403
    foreign = {"csrf_token": csrf}
    assert client.post(path, data=foreign, headers={"Origin": "https://evil"}).status_code == 403
    assert memory.count() == 1
    deleted = client.post(path, data={"csrf_token": csrf})
    assert deleted.status_code == 200
    assert memory_id in deleted.text
    assert memory.count() == 0
    assert client.post("/ui/logout", data={}).status_code == 403


def test_an_id_is_matched_whole_never_cut_to_a_stored_ones_length(
    client: TestClient, memory: MemoryStore
) -> None:
    stored = "A" * 128
    memory.store("Alice's home address is 12 Elm Street.", id=stored)
    _login(client, token=TOKEN)
    longer = f"{stored}-SOMETHING-ELSE"
    assert client.get(f"/ui/memory?id={longer}").status_code == 404
    assert client.get(f"/ui/delete?id={longer}").status_code == 404
    csrf = _csrf(client, f"/ui/delete?id={stored}")
    assert client.post(f"/ui/delete?id={longer}", data={"csrf_token": csrf}).status_code == 404
    assert memory.count() == 1
    assert client.get(f"/ui/memory?id={stored}").status_code == 200


def test_every_page_of_a_memory_is_that_memory_whatever_its_id_holds(
    client: TestClient, memory: MemoryStore
) -> None:
    texts = {"ops/deploy-key": "The deploy key lives in vault.", "x": "Memory x."}
    texts |= {"x/delete": "Memory x/delete.", "a?b&c=#d": "Memory of odd characters."}
    for memory_id, text in texts.items():
        memory.store(text, id=memory_id)
    _login(client, token=TOKEN)
    links = re.findall(r'href="(/ui/memory\?id=[^"]+)"', client.get("/ui/memories").text)
    shown = {}
    for link in links:
        page = client.get(link.replace("&amp;", "&")).text
        shown[link] = [memory_id for memory_id, text in texts.items() if text in page]
        delete = re.search(r'id="delete" href="([^"]+)"', page)
        assert delete is not None
        confirm = client.get(delete.group(1)).text
        assert [i for i, text in texts.items() if text in confirm] == shown[link]
    assert sorted(i for ids in shown.values() for i in ids) == sorted(texts)
    assert all(len(ids) == 1 for ids in shown.values())

    page = client.get("/ui/memory?id=x%2Fdelete").text
    confirm = re.search(r'id="delete" href="([^"]+)"', page)
    assert confirm is not None
    action = re.search(r'action="(/ui/delete\?[^"]+)"', client.get(confirm.group(1)).text)
    assert action is not None
    csrf = _csrf(client, confirm.group(1))
    deleted = client.post(action.group(1), data={"csrf_token": csrf})
    assert "x/delete" in deleted.text
    assert memory.get("x/delete") is None
    assert memory.get("x") is not None
    assert "Memory x." in client.get("/ui/memories/x").text  # an address of an earlier release
    assert client.get("/ui/memory").status_code == 422


def test_the_listing_filters_by_exact_id_and_epoch_dates_and_says_its_order(
    client: TestClient, memory: MemoryStore
) -> None:
    memory.store("Ticket about the billing port.", id="TICKET-42")
    epoch = datetime(2026, 12, 2, 12, tzinfo=timezone.utc).timestamp()
    memory.vectorstore.add_texts(
        ["Imported with epoch seconds."],
        metadatas=[{"created_at": epoch, "user_id": "agent"}],
        ids=["imported"],
    )
    _login(client, token=TOKEN)

    assert "last written first" in client.get("/ui/memories").text
    by_id = client.get("/ui/memories", params={"q": "TICKET-42"}).text
    assert "Ticket about the billing port." in by_id
    assert "newest created first" in by_id
    dated = client.get("/ui/memories", params={"since": "2026-12-02", "until": "2026-12-02"})
    assert "Imported with epoch seconds." in dated.text
    assert "Ticket about" not in dated.text


def _listed_ids(page: str) -> list[str]:
    return re.findall(r'<code class="id">([^<]+)</code>', page)


def test_paging_neither_repeats_nor_skips_while_memories_are_written(
    client: TestClient, memory: MemoryStore
) -> None:
    memory.store_many([f"Note number {i}." for i in range(60)])
    _login(client, token=TOKEN)
    first = client.get("/ui/memories").text
    memory.store_many([f"Later note {i}." for i in range(10)])
    older = re.search(r'href="(/ui/memories\?[^"]+)"[^>]*rel="next"', first)
    assert older is not None

    second = client.get(older.group(1).replace("&amp;", "&")).text

    listed = _listed_ids(first) + _listed_ids(second)
    assert sorted(listed) == sorted(doc.id for doc in memory.list(limit=60))
    assert "10 written since this listing began" in second


def test_a_session_sees_only_its_scope(client: TestClient, memory: MemoryStore) -> None:
    mine = memory.scoped({"user_id": "alice"}).store("alice likes tea").id
    theirs = memory.scoped({"user_id": "bob"}).store("bob's secret is 4242").id
    assert _login(client, token=TOKEN, scope="alice").status_code == 303
    assert "alice likes tea" in client.get("/ui/memories").text
    assert "4242" not in client.get("/ui/memories?user_id=bob").text
    assert client.get(f"/ui/memory?id={theirs}").status_code == 404
    assert client.get(f"/ui/memory?id={mine}").status_code == 200
    assert "4242" not in client.get("/ui/recall?q=secret").text
    assert client.get("/ui/memories", headers={"X-Cogito-User": "bob"}).status_code == 403
    assert _login(client, token=TOKEN, scope="not a user id!").status_code == 422


def test_a_gateway_session_of_a_non_ascii_user_opens_its_pages(
    client: TestClient, memory: MemoryStore
) -> None:
    memory.scoped({"user_id": "zoë"}).store("zoë likes green tea")
    gateway = {"X-Cogito-User": "zo%C3%AB"}  # the header percent-encoded, as the CLI sends it
    page = client.get("/ui/login", headers=gateway)
    nonce = re.search(r'name="nonce" value="([^"]+)"', page.text)
    assert nonce is not None
    login = client.post(
        "/ui/login",
        data={"nonce": nonce.group(1), "token": TOKEN},
        headers=gateway,
        follow_redirects=False,
    )

    assert login.status_code == 303
    listing = client.get("/ui/memories", headers=gateway)
    assert listing.status_code == 200
    assert "zoë likes green tea" in listing.text
    assert client.get("/ui/memories", headers={"X-Cogito-User": "bob"}).status_code == 403


def test_a_server_without_request_scopes_refuses_a_typed_scope(
    tmp_path: Path, memory: MemoryStore
) -> None:
    with TestClient(
        create_app(_settings(tmp_path), memory=memory), base_url="http://127.0.0.1"
    ) as client:
        assert _login(client, token=TOKEN, scope="bob").status_code == 403
        assert _login(client, token=TOKEN).status_code == 303
        assert "agent" in client.get("/ui/scopes").text


def test_memory_text_and_metadata_are_escaped(client: TestClient, memory: MemoryStore) -> None:
    payload = '"><img src=x onerror=alert(1)><script>alert(2)</script>'
    memory_id = memory.store(payload, metadata={"source": "javascript:alert(3)"}).id
    _login(client, token=TOKEN)
    for path in ("/ui/memories", f"/ui/memory?id={memory_id}"):
        html = client.get(path).text
        assert "<img src=x" not in html
        assert "<script>alert" not in html
        assert "&lt;script&gt;alert(2)&lt;/script&gt;" in html
        assert 'href="javascript:' not in html


def test_the_setting_turns_the_inspector_off(tmp_path: Path, memory: MemoryStore) -> None:
    app = create_app(_settings(tmp_path, ui=False), memory=memory)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        assert client.get("/ui/login").status_code == 401  # no open prefix: the API's rule
        headers = {"Authorization": f"Bearer {TOKEN}"}
        assert client.get("/ui/login", headers=headers).status_code == 404


def test_two_stage_recall_streams_stage_one_then_the_models_numbers(
    tmp_path: Path, memory: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    options = server._options

    def with_model(settings: CogitoSettings) -> Any:
        chosen = options(settings)
        chosen.filter_llm = FakeListChatModel(responses=["[2]"])
        return chosen

    monkeypatch.setattr(server, "_options", with_model)
    for text in ("billing runs on port 8083", "billing invoices go out monthly"):
        memory.store(text)
    with TestClient(
        create_app(_settings(tmp_path), memory=memory), base_url="http://127.0.0.1"
    ) as client:
        _login(client, token=TOKEN)
        html = client.get("/ui/recall?q=billing&two_stage=1").text
    assert html.index('id="stage-candidates"') < html.index('id="stage-result"')
    assert 'id="filter-method">filter<' in html
    result = html[html.index('id="stage-result"') :]
    assert re.search(r'<td class="num">2</td>', result)  # the number the model picked


def test_explained_recall_reports_the_runs_that_found_each_memory(memory: MemoryStore) -> None:
    from cogito_lc.service._service import MemoryService, ServiceOptions

    for text in ("billing runs on port 8083", "cats sleep all day"):
        memory.store(text)
    service = MemoryService(memory, ServiceOptions())
    docs, report = service.explain_recall_b(service.view(None), "billing port", 5)
    assert report["subqueries"][0] == "billing port"
    assert report["method"].startswith("decompose_")
    assert len(report["found_by"]) == len(docs)
    first = report["found_by"][0]
    assert docs[0].page_content == "billing runs on port 8083"
    assert {"run": "vector", "subquery": 0, "rank": 1} in first
    assert any(run["run"] == "lexical" for run in first)


def _scope_rows(html: str) -> dict[str, int]:
    """The Scopes view's rows: memory count by user_id."""
    table = html[html.index('id="scopes"') : html.index("</table>")]
    found = re.findall(
        r'<tr class="scope[^"]*">.*?(?:<button[^>]*>|<span class="muted">)([^<]+)<.*?'
        r'<td class="num">(\d+)</td>',
        table,
        re.DOTALL,
    )
    return {user: int(count) for user, count in found}


def _store_three_scopes(memory: MemoryStore) -> None:
    memory.store("the agent's own note")
    for text in ("alice likes tea", "alice runs on tuesdays"):
        memory.scoped({"user_id": "alice"}).store(text)
    memory.scoped({"user_id": "bob"}).store("bob's secret is 4242")


def test_a_login_without_a_scope_lists_every_scope_and_opens_one(
    client: TestClient, memory: MemoryStore
) -> None:
    _store_three_scopes(memory)
    _login(client, token=TOKEN)
    html = client.get("/ui/scopes").text
    assert _scope_rows(html) == {"agent": 1, "alice": 2, "bob": 1}
    assert "4 memories in all" in html
    csrf = _csrf(client, "/ui/scopes")
    assert client.post("/ui/scopes", data={"user_id": "bob"}).status_code == 403  # no CSRF
    chosen = client.post(
        "/ui/scopes", data={"user_id": "bob", "csrf_token": csrf}, follow_redirects=False
    )
    assert chosen.status_code == 303
    assert chosen.headers["location"] == "/ui/memories"
    listing = client.get("/ui/memories").text
    assert "4242" in listing
    assert "alice likes tea" not in listing
    assert '<code id="current-scope">bob</code>' in listing
    bad = client.post("/ui/scopes", data={"user_id": "not a user!", "csrf_token": csrf})
    assert bad.status_code == 422
    # A gateway's scope header confines even this session to its current scope.
    gated = client.get("/ui/scopes", headers={"X-Cogito-User": "bob"})
    assert _scope_rows(gated.text) == {}
    assert "alice" not in gated.text
    switch = client.post(
        "/ui/scopes",
        data={"user_id": "alice", "csrf_token": csrf},
        headers={"X-Cogito-User": "bob"},
    )
    assert switch.status_code == 403


def test_a_session_bound_to_a_scope_lists_only_that_scope(
    client: TestClient, memory: MemoryStore
) -> None:
    _store_three_scopes(memory)
    _login(client, token=TOKEN, scope="alice")
    html = client.get("/ui/scopes").text
    assert "bob" not in html
    assert "agent" not in html.replace("user-agent", "")
    assert re.search(r'<a href="/ui/memories">alice</a></td><td class="num">2</td>', html)
    csrf = _csrf(client, "/ui/scopes")
    refused = client.post("/ui/scopes", data={"user_id": "bob", "csrf_token": csrf})
    assert refused.status_code == 403
    assert "4242" not in client.get("/ui/memories").text


def test_a_server_without_request_scopes_lists_its_one_scope(
    tmp_path: Path, memory: MemoryStore
) -> None:
    _store_three_scopes(memory)
    with TestClient(
        create_app(_settings(tmp_path), memory=memory), base_url="http://127.0.0.1"
    ) as client:
        _login(client, token=TOKEN)
        html = client.get("/ui/scopes").text
        assert "alice" not in html
        assert "bob" not in html
        assert re.search(r'<a href="/ui/memories">agent</a></td><td class="num">1</td>', html)
        csrf = _csrf(client, "/ui/scopes")
        assert (
            client.post("/ui/scopes", data={"user_id": "bob", "csrf_token": csrf}).status_code
            == 403
        )


def test_the_scopes_listed_are_capped_and_the_rest_counted(
    client: TestClient, memory: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ui_views, "MAX_SCOPES_SHOWN", 2)
    _store_three_scopes(memory)
    memory.scoped({"user_id": "carol"}).store("carol's note")
    _login(client, token=TOKEN)
    html = client.get("/ui/scopes").text
    assert _scope_rows(html) == {"agent": 1, "alice": 2}
    assert re.search(r'id="more-scopes">and 2 more scopes', html)


def test_failed_logins_are_limited_per_client(client: TestClient) -> None:
    wrong = "wrong-token-wrong-token"
    for _ in range(MAX_FAILED_LOGINS):
        assert _login(client, token=wrong).status_code == 401
    limited = _login(client, token=TOKEN)  # even the right token waits
    assert limited.status_code == 429
    assert 0 < int(limited.headers["retry-after"]) <= 60
    assert "too many failed logins" in limited.text


def test_the_login_limiter_forgets_failures_after_its_window(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [1000.0]
    monkeypatch.setattr(sessions_module.time, "monotonic", lambda: now[0])
    limiter = LoginLimiter(max_failures=2, window=60.0, max_clients=2)
    limiter.failed("a")
    now[0] += 30
    limiter.failed("a")
    assert limiter.retry_after("a") == 30
    now[0] += 30
    assert limiter.retry_after("a") is None  # the first failure is a minute old
    limiter.failed("b")
    limiter.failed("c")  # over max_clients: the least recent address is forgotten
    limiter.failed("a")
    assert "b" not in limiter._failures


def test_cookies_are_secure_over_https_only(tmp_path: Path, memory: MemoryStore) -> None:
    app = create_app(_settings(tmp_path), memory=memory)
    with TestClient(app, base_url="https://127.0.0.1") as secure:
        assert "secure" in _login(secure, token=TOKEN).headers["set-cookie"].lower()
    with TestClient(app, base_url="http://127.0.0.1") as plain:
        assert "secure" not in _login(plain, token=TOKEN).headers["set-cookie"].lower()


def test_a_wrong_method_on_the_inspector_names_the_allowed_ones(client: TestClient) -> None:
    answer = client.delete("/ui/login")
    assert answer.status_code == 405
    assert answer.headers["allow"] == "GET, POST"
    assert client.put("/ui/scopes").headers["allow"] == "GET, POST"
    assert client.post("/ui/static/inspector.css").headers["allow"] == "GET, HEAD"
    api = client.put("/memories/x", headers={"Authorization": f"Bearer {TOKEN}"})
    assert api.headers["allow"] == "DELETE, GET"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://user:secret@127.0.0.1:8080/v1?key=1#x", "http://127.0.0.1:8080/v1"),
        ("http://127.0.0.1:99999/v1", "http://127.0.0.1:99999/v1"),  # out of range: no 500
        ("http://[::1]:8000/v1", "http://[::1]:8000/v1"),
        ("https://user@api.example.com/v1", "https://api.example.com/v1"),
    ],
)
def test_the_health_page_shows_endpoints_without_secrets_as_written(url: str, shown: str) -> None:
    assert ui_views._public_url(url) == shown


def test_lists_show_a_preview_of_a_long_memory_and_its_page_the_whole_text(
    client: TestClient, memory: MemoryStore
) -> None:
    text = "Runbook: " + " ".join(f"step {i} restart the billing worker." for i in range(200))
    memory_id = memory.store(text).id
    _login(client, token=TOKEN)

    for page in (client.get("/ui/memories").text, client.get("/ui/recall?q=billing").text):
        assert text[:300] in page
        assert text not in page
        assert "…" in page
    assert text in client.get(f"/ui/memory?id={memory_id}").text
