"""The CSDL schema files the simulated BMCs serve at ``/redfish/v1/schema/`` and list in ``/redfish/v1/$metadata``.

The files are DMTF's, vendored from DMTF/Redfish-Publications (``schemas/README.md`` names the commit): the
schemas of every resource the service returns and the common ones their properties use. ``$metadata`` references
each file with all the namespaces it defines (DSP0266 "Service metadata": an ``edmx:Reference`` with
``edmx:Include`` per namespace, and an EntityContainer extending the ServiceRoot's), so a client or DMTF's service
validator finds every type without the network.
"""
from __future__ import annotations

import functools
import re
from pathlib import Path

FOLDER = Path(__file__).with_name("schemas")
PREFIX = "/redfish/v1/schema/"
ROOT_NAMESPACE = "ServiceRoot.v1_5_0"
NAMESPACE = re.compile(r'<Schema\s[^>]*Namespace="([^"]+)"')


def files() -> list[Path]:
    return sorted(FOLDER.glob("*_v1.xml"))


def read(name: str) -> str | None:
    """The text of vendored schema file ``name``; None for any other name."""
    path = FOLDER / name
    return path.read_text() if "/" not in name and path in files() else None


@functools.cache
def metadata() -> str:
    refs = []
    for path in files():
        includes = "".join(f'    <edmx:Include Namespace="{ns}"/>\n'
                           for ns in dict.fromkeys(NAMESPACE.findall(path.read_text())))
        refs.append(f'  <edmx:Reference Uri="{PREFIX}{path.name}">\n{includes}  </edmx:Reference>\n')
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<edmx:Edmx xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx" Version="4.0">\n'
            + "".join(refs) +
            '  <edmx:DataServices>\n'
            '    <Schema xmlns="http://docs.oasis-open.org/odata/ns/edm" Namespace="Service">\n'
            f'      <EntityContainer Name="Service" Extends="{ROOT_NAMESPACE}.ServiceContainer"/>\n'
            '    </Schema>\n'
            '  </edmx:DataServices>\n'
            '</edmx:Edmx>\n')


def service_document() -> dict:
    """The OData service document (DSP0266 "OData service document"): the service root's top-level resources."""
    names = ("Systems", "Chassis", "Managers", "UpdateService", "SessionService", "AccountService")
    return {"@odata.context": "/redfish/v1/$metadata",
            "value": [{"name": "Service", "kind": "Singleton", "url": "/redfish/v1/"}]
            + [{"name": n, "kind": "Singleton", "url": f"/redfish/v1/{n}"} for n in names]}
