"""The memory inspector (/ui) in a real browser: Debian's chromium driven by Playwright.

One uvicorn service on 127.0.0.1 (embedded Chroma, MiniLM, a token, per-request
scopes) and one browser for the module. Screenshots of the main views are
written to ``test-artifacts/inspector/`` (``COGITO_TEST_ARTIFACTS`` moves it);
``COGITO_UPDATE_SCREENSHOT=1`` also writes the README's ``docs/images/inspector.png``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration_tests.service_process import ServiceProcess, checked_service

playwright_sync = pytest.importorskip("playwright.sync_api")
expect = playwright_sync.expect

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
TOKEN = "inspector-browser-token"  # noqa: S105 - a test value
ROOT = Path(__file__).resolve().parents[3]
ARTIFACTS = Path(os.environ.get("COGITO_TEST_ARTIFACTS", ROOT / "test-artifacts")) / "inspector"
README_SCREENSHOT = ROOT / "docs" / "images" / "inspector.png"

BILLING = "The billing service listens on port 8083 behind the internal gateway."
STAGING = "The staging database runs on host db-stage-7 and is wiped every Sunday."
ALICE_MEMORIES = [
    BILLING,
    STAGING,
    "Alice prefers dark mode in every editor she uses.",
    "Deploys to production need two approvals from the platform team.",
    "The on-call rotation changes every Monday at 09:00 UTC.",
]
BOB_SECRET = "Bob's vault code for the lab door is 4242-zebra."  # noqa: S105 - a test value
SCRIPT_PAYLOAD = "<script>window.__xss = 1; alert('script')</script> stored by a careless agent"
IMG_PAYLOAD = '"><img src=x onerror="window.__xss = 2; alert(\'img\')"> broke out of an attribute'
LINK_PAYLOAD = "<a href=\"javascript:alert('link')\">click me</a> javascript:alert(3)"

pytestmark = pytest.mark.skipif(
    not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed (make setup-browser)"
)


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    root = tmp_path_factory.mktemp("inspector")
    with checked_service(
        root / "store", token=TOKEN, settings={"COGITO_ALLOW_REQUEST_SCOPE": "true"}
    ) as process:
        yield process


@pytest.fixture(scope="module")
def ids(service: ServiceProcess) -> dict[str, str]:
    """The memories of alice and bob, stored through the API; their ids by text."""
    found: dict[str, str] = {}
    with service.client(user="alice") as client:
        for text in ALICE_MEMORIES:
            found[text] = client.post("/store", json={"text": text}).json()["id"]
        for text, metadata in (
            (SCRIPT_PAYLOAD, {"source": "javascript:alert(4)"}),
            (IMG_PAYLOAD, {"note": "\"><img src=x onerror=alert('meta')>"}),
            (LINK_PAYLOAD, {"url": "javascript:alert(5)"}),
        ):
            answer = client.post("/store", json={"text": text, "metadata": metadata})
            assert answer.status_code == 200, answer.text
            found[text] = answer.json()["id"]
    with service.client(user="bob") as client:
        found[BOB_SECRET] = client.post("/store", json={"text": BOB_SECRET}).json()["id"]
    return found


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright_sync.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox"]
        )
        yield chromium
        chromium.close()


class Watched:
    """A logged-in page and what it reported: dialogs, console messages."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.dialogs: list[str] = []
        self.console: list[str] = []
        page.on("dialog", self._dialog)
        page.on("console", lambda message: self.console.append(message.text))
        page.on("pageerror", lambda error: self.console.append(f"pageerror: {error}"))

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()


def _login(browser: Any, service: ServiceProcess, scope: str) -> Watched:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    watched = Watched(context.new_page())
    page = watched.page
    page.goto(f"{service.base_url}/ui")
    assert page.url.endswith("/ui/login")
    page.fill("#token", TOKEN)
    page.fill("#scope", scope)
    page.click("#login")
    page.wait_for_url("**/ui/scopes")
    return watched


@pytest.fixture(scope="module")
def alice(browser: Any, service: ServiceProcess, ids: dict[str, str]) -> Iterator[Watched]:
    watched = _login(browser, service, "alice")
    yield watched
    watched.page.context.close()


@pytest.fixture(scope="module")
def bob(browser: Any, service: ServiceProcess, ids: dict[str, str]) -> Iterator[Watched]:
    watched = _login(browser, service, "bob")
    yield watched
    watched.page.context.close()


def _shot(page: Any, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def _recall(page: Any, base_url: str, query: str) -> list[str]:
    page.goto(f"{base_url}/ui/recall")
    page.fill("#query", query)
    page.click("#run-recall")
    page.wait_for_selector("#recall-result")
    return [text.strip() for text in page.locator("#hits tr.hit td.text a").all_inner_texts()]


def test_login_keeps_the_token_out_of_urls_and_scripts(
    alice: Watched, service: ServiceProcess
) -> None:
    page = alice.page
    cookies = {cookie["name"]: cookie for cookie in page.context.cookies()}
    session = cookies["cogito_ui"]
    assert session["httpOnly"] is True
    assert session["sameSite"] == "Strict"
    assert TOKEN not in session["value"]
    assert page.evaluate("document.cookie") == ""  # HttpOnly: no script can read it
    assert TOKEN not in page.url
    assert page.inner_text("#current-scope") == "alice"
    _shot(page, "scopes")


def test_a_wrong_token_is_refused(browser: Any, service: ServiceProcess) -> None:
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{service.base_url}/ui/login")
    page.fill("#token", "not-the-token-at-all")
    page.click("#login")
    assert "wrong token" in page.inner_text("#error-detail")
    assert "cogito_ui" not in {cookie["name"] for cookie in context.cookies()}
    page.goto(f"{service.base_url}/ui/memories")
    assert page.url.endswith("/ui/login")
    context.close()


def test_browse_a_scope_newest_first_and_filter(alice: Watched, service: ServiceProcess) -> None:
    page = alice.page
    page.click("#scopes a")
    page.wait_for_url("**/ui/memories")
    texts = [t.strip() for t in page.locator("#memories tr.memory td.text a").all_inner_texts()]
    assert texts[0] == LINK_PAYLOAD.strip()  # the last one written comes first
    assert BILLING in texts
    assert BOB_SECRET not in page.content()
    _shot(page, "memories")
    page.fill("input[name=q]", "port 8083")
    page.click(".filters button")
    # A locator wait, not wait_for_function: the page's CSP forbids evaluating strings.
    expect(page.locator("#memories tr.memory")).to_have_count(1)
    assert "q=port%208083" in page.url  # htmx pushed the filtered view's URL
    assert page.locator("#memories tr.memory td.text").inner_text().strip() == BILLING


def test_recall_ranks_the_expected_memory_first_with_its_method_tag(
    alice: Watched, service: ServiceProcess
) -> None:
    page = alice.page
    texts = _recall(page, service.base_url, "which port does the billing service listen on?")
    assert texts[0] == BILLING
    assert page.inner_text("#recall-method").startswith("decompose_")
    first_runs = page.locator("#hits tr.hit").first.locator(".tag").all_inner_texts()
    assert any(run.startswith("vector") for run in first_runs), first_runs
    assert page.locator("#subqueries li").count() >= 1
    path = _shot(page, "recall")
    if os.environ.get("COGITO_UPDATE_SCREENSHOT") == "1":
        README_SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, README_SCREENSHOT)


def test_open_a_memory_delete_it_and_recall_no_longer_finds_it(
    alice: Watched, service: ServiceProcess, ids: dict[str, str]
) -> None:
    page = alice.page
    query = "where does the staging database run?"
    assert _recall(page, service.base_url, query)[0] == STAGING
    page.locator("#hits tr.hit td.text a").first.click()
    page.wait_for_selector("#memory-text")
    assert page.inner_text("#memory-id") == ids[STAGING]
    assert page.inner_text("#memory-text") == STAGING
    assert "created_at" in page.inner_text("#metadata")
    _shot(page, "memory")
    page.click("#delete")
    page.click("#confirm-delete")
    page.wait_for_selector("#deleted")
    assert ids[STAGING] in page.inner_text("#deleted")
    assert STAGING not in _recall(page, service.base_url, query)
    with service.client(user="alice") as client:  # the API's view: the same delete
        assert client.get(f"/memories/{ids[STAGING]}").status_code == 404
    page.goto(f"{service.base_url}/ui/memory?id={ids[STAGING]}")
    assert "404" in page.inner_text("h1")


def test_stored_payloads_render_as_inert_text(
    alice: Watched, service: ServiceProcess, ids: dict[str, str]
) -> None:
    page = alice.page
    page.goto(f"{service.base_url}/ui/memories")
    body = page.inner_text("#memories")
    for payload in (SCRIPT_PAYLOAD, IMG_PAYLOAD, LINK_PAYLOAD):
        assert payload.strip() in body  # shown verbatim, as text
    for payload in (SCRIPT_PAYLOAD, IMG_PAYLOAD, LINK_PAYLOAD):
        page.goto(f"{service.base_url}/ui/memory?id={ids[payload]}")
        assert page.inner_text("#memory-text") == payload
    _recall(page, service.base_url, "careless agent script attribute click")
    for view in ("memories", f"memories/{ids[IMG_PAYLOAD]}", f"memories/{ids[LINK_PAYLOAD]}"):
        page.goto(f"{service.base_url}/ui/{view}")
        assert page.locator("main script, main img").count() == 0
        assert page.locator("a[href^='javascript:' i]").count() == 0
        assert page.evaluate("window.__xss") is None
    page.goto(f"{service.base_url}/ui/memory?id={ids[SCRIPT_PAYLOAD]}")
    assert "javascript:alert(4)" in page.inner_text("#metadata")  # the metadata value: text
    assert alice.dialogs == []
    assert not [m for m in alice.console if "Content Security Policy" in m], alice.console


def test_every_page_sends_a_strict_content_security_policy(service: ServiceProcess) -> None:
    for path in ("/ui/login", "/ui/memories"):
        answer = httpx.get(f"{service.base_url}{path}")
        policy = answer.headers["content-security-policy"]
        assert "script-src 'self'" in policy
        assert "unsafe-inline" not in policy
        assert "frame-ancestors 'none'" in policy
        assert answer.headers["x-content-type-options"] == "nosniff"


def test_a_post_without_the_csrf_token_is_refused(
    alice: Watched, service: ServiceProcess, ids: dict[str, str]
) -> None:
    target = f"{service.base_url}/ui/delete?id={ids[BILLING]}"
    request = alice.page.context.request  # the session cookie, no CSRF token
    assert request.post(target, form={}).status == 403
    assert request.post(target, form={"csrf_token": "forged"}).status == 403
    with service.client(user="alice") as client:
        assert client.get(f"/memories/{ids[BILLING]}").status_code == 200


def test_a_second_user_never_sees_the_first_users_memories(
    alice: Watched, bob: Watched, service: ServiceProcess, ids: dict[str, str]
) -> None:
    bob.page.goto(f"{service.base_url}/ui/memories")
    bob_page = bob.page.inner_text("main")
    assert BOB_SECRET in bob_page
    assert not [text for text in ALICE_MEMORIES if text in bob_page]
    assert BILLING not in _recall(bob.page, service.base_url, "billing service port")
    assert BOB_SECRET not in _recall(alice.page, service.base_url, "vault code for the lab door")
    alice.page.goto(f"{service.base_url}/ui/memory?id={ids[BOB_SECRET]}")
    assert "404" in alice.page.inner_text("h1")
    assert BOB_SECRET not in alice.page.content()
    alice.page.goto(f"{service.base_url}/ui/memories?scope=bob&user_id=bob")
    assert BOB_SECRET not in alice.page.content()
    # A gateway's scope header naming another user does not reuse alice's session.
    answer = alice.page.context.request.get(
        f"{service.base_url}/ui/memories", headers={"X-Cogito-User": "bob"}
    )
    assert answer.status == 403
    assert BOB_SECRET not in answer.text()


def test_health_shows_the_state_and_no_secret(alice: Watched, service: ServiceProcess) -> None:
    page = alice.page
    page.goto(f"{service.base_url}/ui/health")
    text = page.inner_text("#health")
    assert "embedded Chroma" in text
    assert "Lexical index" in text
    assert "huggingface:all-MiniLM-L6-v2" in text
    assert TOKEN not in page.content()
    _shot(page, "health")


def test_logout_ends_the_session(browser: Any, service: ServiceProcess, ids: Any) -> None:
    watched = _login(browser, service, "alice")
    page = watched.page
    page.click("header button.link")
    page.wait_for_url("**/ui/login")
    page.goto(f"{service.base_url}/ui/scopes")
    assert page.url.endswith("/ui/login")
    page.context.close()


def test_a_login_without_a_scope_lists_every_scope_and_opens_one(
    browser: Any, alice: Watched, service: ServiceProcess, ids: dict[str, str]
) -> None:
    totals: dict[str, int] = {}
    for user in ("alice", "bob"):
        with service.client(user=user) as client:
            totals[user] = client.get("/memories").json()["total"]
    watched = _login(browser, service, "")
    page = watched.page
    rows = {
        row.locator("td").first.locator("button").inner_text().strip(): int(
            row.locator("td.num").inner_text()
        )
        for row in page.locator("#scopes tr.scope").all()
    }
    assert rows == totals  # the configured scope holds nothing: not listed
    page.click("#scopes button[value=bob]")
    page.wait_for_url("**/ui/memories")
    assert page.inner_text("#current-scope") == "bob"
    listing = page.inner_text("#memories")
    assert BOB_SECRET in listing
    assert BILLING not in listing
    _shot(page, "scopes-all")
    page.context.close()
    # A session bound to alice still lists alice alone, with no switch.
    alice.page.goto(f"{service.base_url}/ui/scopes")
    assert alice.page.locator("#scopes tbody tr").count() == 1
    assert alice.page.locator("#scopes button").count() == 0
    assert "bob" not in alice.page.inner_text("#scopes")
