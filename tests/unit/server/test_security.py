"""SPEC §11 for the server: only what is under DIR, bounded requests, JSON errors, strict headers."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.server.app import CSP
from stepscope.server.discover import discover_runs
from stepscope.server.store import RunStore
from tests.unit.server.served import TestClient, client_for

TRAVERSALS = [
    "/static/../../../../etc/passwd", "/static/..%2f..%2f..%2fetc%2fpasswd", "/static/%2e%2e/%2e%2e/etc/passwd",
    "/static/%252e%252e%252fetc%252fpasswd", "/static//etc/passwd", "/static/app.js/../../pyproject.toml",
    "/static/....//....//etc/passwd", "/static/app.py", "/static/index.html%00.js", "/static/.%2e/server/app.py",
    "/api/v1/runs/..", "/api/v1/runs/%2e%2e", "/api/v1/runs/..%2f..%2fetc%2fpasswd", "/api/v1/runs/%2fetc%2fpasswd",
    "/api/v1/runs//etc/passwd", "/api/v1/runs/..%5c..%5cwindows", "/api/v1/runs/~root", "/api/v1/runs/C:%5Cx",
    "/etc/passwd", "/../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd",
]


@pytest.mark.parametrize("path", TRAVERSALS)
def test_no_path_traversal(client: TestClient, path: str) -> None:
    r = client.get(path)
    assert r.status_code in (400, 404), (path, r.status_code)
    assert r.headers["content-type"].startswith("application/json")
    assert "root:" not in r.text and "[project]" not in r.text and "import" not in r.text


def test_run_ids_are_keys_not_paths(client: TestClient, served_dir: Path) -> None:
    for bad in (str(served_dir / "cpu_ddp_2rank"), "cpu_ddp_2rank", "../cpu_ddp_2rank", "0" * 12, "ABCDEFABCDEF"):
        r = client.get("/api/v1/runs/" + bad.lstrip("/"))
        assert r.status_code in (400, 404)
        r = client.get("/api/v1/diff", params={"base": bad, "new": bad})
        assert r.status_code in (400, 404) and "error" in r.json()


def test_static_files_are_a_fixed_set(client: TestClient) -> None:
    for name in ("app.js", "util.js", "timeline.js", "app.css", "report.css", "icon.svg"):
        r = client.get(f"/static/{name}")
        assert r.status_code == 200 and r.headers["x-content-type-options"] == "nosniff"
    assert client.get("/static/app.js").headers["content-type"].startswith("text/javascript")
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "<script type=\"module\" src=\"/static/app.js\">" in page.text
    assert "http://" not in page.text and "https://" not in page.text  # nothing from elsewhere


def test_security_headers_on_every_answer(client: TestClient, ids: dict[str, str]) -> None:
    for path in ("/", "/api/v1/runs", "/nope", f"/api/v1/runs/{ids['h100/base']}?rank=x"):
        h = client.get(path).headers
        assert h["content-security-policy"] == CSP
        assert h["x-frame-options"] == "DENY" and h["referrer-policy"] == "no-referrer"
    assert "script-src 'self'" in CSP and "unsafe-inline" not in CSP and "default-src 'none'" in CSP


def test_only_get_without_body(client: TestClient) -> None:
    for method in ("POST", "PUT", "DELETE", "PATCH", "OPTIONS"):
        r = client.request(method, "/api/v1/runs")
        assert r.status_code == 405 and r.json()["error"]
    r = client.request("GET", "/api/v1/runs", content=b"x" * 10_000)
    assert r.status_code == 413


def test_bounded_urls_and_queries(client: TestClient, ids: dict[str, str]) -> None:
    assert client.get("/api/v1/runs/" + "a" * 600).status_code == 414
    assert client.get("/api/v1/runs?" + "a=1&" * 400).status_code == 414
    many = "&".join(f"p{i}=1" for i in range(20))
    r = client.get(f"/api/v1/runs/{ids['h100/base']}/timeline?{many}")
    assert r.status_code == 400 and "too many" in r.json()["error"]
    assert client.get("/api/v1/runs?x=1").status_code == 400


def test_foreign_host_is_refused_on_loopback(client: TestClient) -> None:
    for host in ("evil.example", "127.0.0.1.evil.example", "attacker:80", "127.0.0.1:80@evil.com",
                 "localhost@evil.com", "127.0.0.1:80/evil.com", "127.0.0.1:x", "[::1]@evil.com", "127.0.0.1 evil.com",
                 "", "127.0.0.1:", "::1"):
        r = client.get("/api/v1/runs", headers={"host": host})
        assert r.status_code == 400 and "Host" in r.json()["error"]
    for host in ("127.0.0.1:9", "localhost:9", "[::1]:9", "LOCALHOST"):
        assert client.get("/api/v1/health", headers={"host": host}).status_code == 200


def test_the_bound_address_is_an_allowed_host() -> None:
    from stepscope.server.serve import allowed_hosts

    assert allowed_hosts("127.0.0.1") == ("127.0.0.1", "localhost", "[::1]")
    assert "127.0.0.2" in (allowed_hosts("127.0.0.2") or ()) and "[::1]" in (allowed_hosts("::1") or ())
    assert allowed_hosts("0.0.0.0") is None


def test_host_check_off_when_bound_elsewhere(store: RunStore) -> None:
    with client_for(store, allowed_hosts=None) as c:
        assert c.get("/api/v1/health", headers={"host": "box.lan:8000"}).status_code == 200


def test_crashes_are_json_without_traceback(served_dir: Path) -> None:
    def boom(path: Path) -> object:
        raise RuntimeError("secret internal detail /home/x")

    store = RunStore(discover_runs(served_dir), loader=boom)
    with client_for(store) as c:
        rid = c.get("/api/v1/runs").json()["runs"][0]["id"]
        r = c.get(f"/api/v1/runs/{rid}")
        assert r.status_code == 500 and "Traceback" not in r.text and r.json()["status"] == 500
        assert c.get("/api/v1/health").status_code == 200  # still up
