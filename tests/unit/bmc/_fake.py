"""A stand-in for DMTF's ``redfish`` client object that answers from a mockup folder (DMTF's public-rackmount1 in
tests/data/redfish_client/): GET of /redfish/v1/X is X/index.json; ``pages`` adds answers at paths with a query
(the mockup names a next page it does not hold); POSTs are recorded and answered by ``on_post``."""
from __future__ import annotations

import json
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "data" / "redfish_client"
MOCKUP = DATA / "public-rackmount1"


class Response:
    def __init__(self, status: int, body=b"", content_type="application/json"):
        self.status = status
        self.read = body if isinstance(body, bytes) else json.dumps(body).encode()
        self._type = content_type

    def getheader(self, name):
        return self._type if name.lower() == "content-type" else None


class FakeClient:
    """What ``RedfishBmc`` uses of the library's HttpClient."""

    def __init__(self, folder: Path = MOCKUP, pages: dict | None = None, on_post=None, **kwargs):
        self.folder, self.pages, self.on_post = folder, pages or {}, on_post
        self.kwargs = kwargs
        self.gets: list[str] = []
        self.posts: list[tuple[str, dict]] = []
        self.logged_in = self.logged_out = False
        self.password = kwargs.get("password")
        self.overrides: dict[str, dict] = {}

    def get(self, path, args=None, headers=None, timeout=None, max_retry=None):
        self.gets.append(path)
        if path in self.overrides:
            return Response(200, self.overrides[path])
        if path in self.pages:
            return Response(200, self.pages[path])
        relative = path.split("?")[0].removeprefix("/redfish/v1").strip("/")
        file = self.folder / relative / "index.json"
        if "?" in path or not file.is_file():
            return Response(404, {"error": {"message": f"{path} not found"}})
        return Response(200, file.read_bytes())

    def post(self, path, args=None, body=None, headers=None, timeout=None, max_retry=None):
        self.posts.append((path, body))
        return self.on_post(path, body) if self.on_post else Response(204)

    def login(self, username=None, password=None, auth="session", headers=None):
        self.logged_in = True

    def logout(self):
        self.logged_out = True

    def set_password(self, password):
        self.password = password


def factory(**options):
    """(a ``factory`` for RedfishBmc, the list the client it made goes into)."""
    made: list[FakeClient] = []

    def make(**kwargs):
        client = FakeClient(**options, **kwargs)
        made.append(client)
        return client
    return make, made
