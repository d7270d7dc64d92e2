"""GET on a simulated BMC: the URI -> resource table over ``resources`` (one ComputerSystem, Manager and Chassis).

Pagination of the SEL as DSP0266 "Query parameters" and "Collection resources" give it: a page of at most
``resources.PAGE`` members, ``Members@odata.count`` the whole collection's size, ``Members@odata.nextLink`` the next
page's URI with ``$skip``; ``$top`` is honoured.
"""
from __future__ import annotations

from urllib.parse import parse_qs

from provision.sim.bmc import resources as r
from provision.sim.bmc.resources import CHASSIS, MANAGER, ROOT, SYSTEM, View, _collection, _odata

SEL = f"{SYSTEM}/LogServices/SEL"


def system(view: View) -> dict:
    on = view.power_state == "On"
    s = view.model.get("system") or {}
    return _odata(SYSTEM, "#ComputerSystem.v1_13_0.ComputerSystem", Id="DGX", Name=view.name,
                  HostName=view.name, SystemType="Physical", Manufacturer=s.get("manufacturer"),
                  Model=s.get("product_name"), SerialNumber=s.get("serial_number"), UUID=s.get("uuid"),
                  PowerState="On" if on else "Off", BiosVersion=str((view.model.get("bios") or {}).get("version")),
                  Status={"State": "Enabled" if on else "StandbyOffline", "Health": r.system_health(view)},
                  LogServices={"@odata.id": f"{SYSTEM}/LogServices"},
                  Links={"Chassis": [{"@odata.id": CHASSIS}], "ManagedBy": [{"@odata.id": MANAGER}]},
                  Actions={"#ComputerSystem.Reset": {"target": f"{SYSTEM}/Actions/ComputerSystem.Reset",
                                                     "ResetType@Redfish.AllowableValues": r.RESET_TYPES}})


def manager(view: View) -> dict:
    return _odata(MANAGER, "#Manager.v1_10_0.Manager", Id="BMC", Name="Baseboard management controller",
                  ManagerType="BMC", FirmwareVersion=str((view.model.get("bmc") or {}).get("firmware_revision")),
                  Model="AMI MegaRAC", Status={"State": "Enabled", "Health": "OK"},
                  Links={"ManagerForServers": [{"@odata.id": SYSTEM}], "ManagerForChassis": [{"@odata.id": CHASSIS}]})


def chassis(view: View) -> dict:
    health = r.chassis_health(view)
    return _odata(CHASSIS, "#Chassis.v1_15_0.Chassis", Id="DGX", Name="DGX chassis", ChassisType="RackMount",
                  PowerState=view.power_state, Status={"State": "Enabled", "Health": health, "HealthRollup": health},
                  PowerSubsystem={"@odata.id": f"{CHASSIS}/PowerSubsystem"},
                  ThermalSubsystem={"@odata.id": f"{CHASSIS}/ThermalSubsystem"},
                  Sensors={"@odata.id": f"{CHASSIS}/Sensors"},
                  Links={"ComputerSystems": [{"@odata.id": SYSTEM}], "ManagedBy": [{"@odata.id": MANAGER}]})


def power_subsystem(view: View) -> dict:
    plat = view.model.get("platform") or {}
    supplies = r.psus(view)
    working = sum(1 for p in supplies.values() if p["Status"]["State"] == "Enabled")
    need = int(plat.get("psu_min_needed", 1))
    redundancy = "OK" if working == len(supplies) else "Warning" if working >= need else "Critical"
    return _odata(f"{CHASSIS}/PowerSubsystem", "#PowerSubsystem.v1_1_0.PowerSubsystem", Id="PowerSubsystem",
                  Name="Power subsystem", CapacityWatts=float(sum(p["PowerCapacityWatts"] for p in supplies.values())),
                  PowerSupplies={"@odata.id": f"{CHASSIS}/PowerSubsystem/PowerSupplies"},
                  PowerSupplyRedundancy=[{
                      "RedundancyType": "NPlusM", "MaxSupportedInGroup": len(supplies), "MinNeededInGroup": need,
                      "RedundancyGroup": [{"@odata.id": p["@odata.id"]} for p in supplies.values()],
                      "Status": {"State": "Enabled", "Health": redundancy}}],
                  Status={"State": "Enabled", "Health": r.worst(redundancy, *(p["Status"]["Health"]
                                                                             for p in supplies.values()))})


def thermal_subsystem(view: View) -> dict:
    health = r.worst(*(f["Status"]["Health"] for f in r.fans(view).values()))
    return _odata(f"{CHASSIS}/ThermalSubsystem", "#ThermalSubsystem.v1_0_0.ThermalSubsystem", Id="ThermalSubsystem",
                  Name="Thermal subsystem", Fans={"@odata.id": f"{CHASSIS}/ThermalSubsystem/Fans"},
                  Status={"State": "Enabled", "Health": health})


def log_service(view: View) -> dict:
    return _odata(SEL, "#LogService.v1_1_0.LogService", Id="SEL", Name="System Event Log", LogEntryType="SEL",
                  OverWritePolicy="WrapsWhenFull", ServiceEnabled=True, Entries={"@odata.id": f"{SEL}/Entries"},
                  Actions={"#LogService.ClearLog": {"target": f"{SEL}/Actions/LogService.ClearLog"}},
                  Status={"State": "Enabled", "Health": "OK"})


def log_entry(view: View, entry: dict) -> dict:
    body = {k: v for k, v in entry.items() if k not in ("fault", "Id")}
    return _odata(f"{SEL}/Entries/{entry['Id']}", "#LogEntry.v1_4_0.LogEntry", Id=entry["Id"],
                  Name=f"SEL entry {entry['Id']}", EntryType="SEL", **body)


def log_entries(view: View, query: str) -> dict:
    entries = view.sel()
    params = parse_qs(query)
    skip = _int(params.get("$skip"), 0)
    top = min(_int(params.get("$top"), r.PAGE), r.PAGE)
    page = entries[skip:skip + top]
    body = _odata(f"{SEL}/Entries", "#LogEntryCollection.LogEntryCollection", Name="System Event Log entries",
                  Members=[log_entry(view, e) for e in page], **{"Members@odata.count": len(entries)})
    if skip + top < len(entries):
        body["Members@odata.nextLink"] = f"{SEL}/Entries?$skip={skip + top}&$top={top}"
    return body


def _int(values: list[str] | None, default: int) -> int:
    try:
        return max(0, int(values[0])) if values else default
    except ValueError:
        return default


def session_service() -> dict:
    return _odata(f"{ROOT}/SessionService", "#SessionService.v1_1_8.SessionService", Id="SessionService",
                  Name="Session Service", ServiceEnabled=True, SessionTimeout=1800,
                  Sessions={"@odata.id": f"{ROOT}/SessionService/Sessions"},
                  Status={"State": "Enabled", "Health": "OK"})


def update_service() -> dict:
    return _odata(f"{ROOT}/UpdateService", "#UpdateService.v1_8_0.UpdateService", Id="UpdateService",
                  Name="Update Service", ServiceEnabled=True,
                  FirmwareInventory={"@odata.id": f"{ROOT}/UpdateService/FirmwareInventory"},
                  Status={"State": "Enabled", "Health": "OK"})


ACCOUNTS = f"{ROOT}/AccountService"
# DSP0266 "Roles": the three predefined roles and their privileges (Privileges schema PrivilegeType).
ROLES = {"Administrator": ["Login", "ConfigureManager", "ConfigureUsers", "ConfigureSelf", "ConfigureComponents"],
         "Operator": ["Login", "ConfigureSelf", "ConfigureComponents"], "ReadOnly": ["Login", "ConfigureSelf"]}


def account_service() -> dict:
    return _odata(ACCOUNTS, "#AccountService.v1_5_0.AccountService", Id="AccountService", Name="Account Service",
                  ServiceEnabled=True, Accounts={"@odata.id": f"{ACCOUNTS}/Accounts"},
                  Roles={"@odata.id": f"{ACCOUNTS}/Roles"}, Status={"State": "Enabled", "Health": "OK"})


def accounts() -> dict[str, dict]:
    """The one account: admin, an Administrator (its password is never shown: null, ManagerAccount schema)."""
    return {"1": _odata(f"{ACCOUNTS}/Accounts/1", "#ManagerAccount.v1_7_0.ManagerAccount", Id="1", Name="admin",
                        UserName="admin", RoleId="Administrator", Enabled=True, Locked=False, Password=None,
                        AccountTypes=["Redfish", "IPMI"],
                        Links={"Role": {"@odata.id": f"{ACCOUNTS}/Roles/Administrator"}})}


def roles() -> dict[str, dict]:
    return {name: _odata(f"{ACCOUNTS}/Roles/{name}", "#Role.v1_2_0.Role", Id=name, Name=f"{name} role", RoleId=name,
                         IsPredefined=True, AssignedPrivileges=privileges)
            for name, privileges in ROLES.items()}


def resource(path: str, query: str, view: View, sessions: list[str]) -> dict | None:  # noqa: C901 - a table
    """The resource at ``path`` (no trailing slash); None when there is none. ``sessions``: the live session Ids."""
    fixed = {
        ROOT: lambda: r.service_root(view),
        f"{ROOT}/Systems": lambda: _collection(f"{ROOT}/Systems", "ComputerSystemCollection", "Systems", [SYSTEM]),
        SYSTEM: lambda: system(view),
        f"{SYSTEM}/LogServices": lambda: _collection(f"{SYSTEM}/LogServices", "LogServiceCollection", "Log services",
                                                     [SEL]),
        SEL: lambda: log_service(view),
        f"{SEL}/Entries": lambda: log_entries(view, query),
        f"{ROOT}/Managers": lambda: _collection(f"{ROOT}/Managers", "ManagerCollection", "Managers", [MANAGER]),
        MANAGER: lambda: manager(view),
        f"{ROOT}/Chassis": lambda: _collection(f"{ROOT}/Chassis", "ChassisCollection", "Chassis", [CHASSIS]),
        CHASSIS: lambda: chassis(view),
        f"{CHASSIS}/PowerSubsystem": lambda: power_subsystem(view),
        f"{CHASSIS}/ThermalSubsystem": lambda: thermal_subsystem(view),
        f"{ROOT}/UpdateService": update_service,
        f"{ROOT}/SessionService": session_service,
        ACCOUNTS: account_service,
        f"{ROOT}/SessionService/Sessions": lambda: _collection(
            f"{ROOT}/SessionService/Sessions", "SessionCollection", "Sessions",
            [f"{ROOT}/SessionService/Sessions/{s}" for s in sessions]),
    }
    if path in fixed:
        return fixed[path]()
    families = {
        f"{CHASSIS}/PowerSubsystem/PowerSupplies": ("PowerSupplyCollection", "Power supplies", r.psus),
        f"{CHASSIS}/ThermalSubsystem/Fans": ("FanCollection", "Fans", r.fans),
        f"{CHASSIS}/Sensors": ("SensorCollection", "Sensors", r.sensors),
        f"{ROOT}/UpdateService/FirmwareInventory": ("SoftwareInventoryCollection", "Firmware inventory", r.firmware),
        f"{ACCOUNTS}/Accounts": ("ManagerAccountCollection", "Accounts", lambda _view: accounts()),
        f"{ACCOUNTS}/Roles": ("RoleCollection", "Roles", lambda _view: roles()),
    }
    parent, _, leaf = path.rpartition("/")
    if path in families:
        kind, name, members = families[path]
        return _collection(path, kind, name, [m["@odata.id"] for m in members(view).values()])
    if parent in families:
        return families[parent][2](view).get(leaf)
    if parent == f"{SEL}/Entries":
        return next((log_entry(view, e) for e in view.sel() if e["Id"] == leaf), None)
    if parent == f"{ROOT}/SessionService/Sessions" and leaf in sessions:
        return _odata(path, "#Session.v1_0_0.Session", Id=leaf, Name=f"Session {leaf}", UserName="admin")
    return None
