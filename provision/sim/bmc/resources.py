"""The Redfish resource tree of one simulated BMC, built from its node's hardware model on every request.

Layout after a DGX H100 BMC and OpenBMC's bmcweb: one ComputerSystem, one Manager (the BMC), one Chassis with the
2021.2 PowerSubsystem/ThermalSubsystem/Sensors model (DMTF DSP0268 and the Chassis, PowerSupply, Fan, Sensor
schemas), a SEL LogService paged 1,000 entries at a time as bmcweb pages its event logs ($skip/$top, DSP0266
"Query parameters"), and a FirmwareInventory whose member Ids are the names NVIDIA's nvfwupd shows for a DGXH100
(NVIDIA/open-nvfwupd firmware_update_guide/docs/appendix/json-options.rst: HostBMC_0, HostBIOS_0, CPLDMB_0,
CPLDMID_0, HGX_FW_BMC_0, HGX_FW_FPGA_0, HGX_FW_GPU_SXM_1..8, HGX_InfoROM_GPU_SXM_1..8, HGX_FW_NVSwitch_0..3,
CX7_0.., PSU_0..5). The resource Ids System "DGX", Manager "BMC" and Chassis "DGX" are the simulator's choice.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

ROOT = "/redfish/v1"
SYSTEM, MANAGER, CHASSIS = f"{ROOT}/Systems/DGX", f"{ROOT}/Managers/BMC", f"{ROOT}/Chassis/DGX"
RESET_TYPES = ["On", "ForceOff", "GracefulShutdown", "ForceRestart", "PowerCycle"]
PAGE = 1000
RANK = {"OK": 0, "Warning": 1, "Critical": 2}


@dataclass
class View:
    """What a request sees of one BMC: its node's model, power state, active fault kinds and SEL."""

    name: str
    model: dict
    power_state: str
    faults: set = field(default_factory=set)
    sel: Callable[[], list] = list
    uuid: str = "00000000-0000-0000-0000-000000000000"


def worst(*healths: str) -> str:
    return max(healths or ("OK",), key=lambda h: RANK.get(h, 0))


def _odata(uri: str, kind: str, **body) -> dict:
    return {"@odata.id": uri, "@odata.type": kind, **body}


def _collection(uri: str, kind: str, name: str, members: list[str]) -> dict:
    return _odata(uri, f"#{kind}.{kind}", Name=name, Members=[{"@odata.id": m} for m in members],
                  **{"Members@odata.count": len(members)})


def service_root(view: View) -> dict:
    return _odata(ROOT, "#ServiceRoot.v1_5_0.ServiceRoot", Id="RootService", Name="Root Service",
                  RedfishVersion="1.17.0", UUID=view.uuid,
                  Systems={"@odata.id": f"{ROOT}/Systems"}, Managers={"@odata.id": f"{ROOT}/Managers"},
                  Chassis={"@odata.id": f"{ROOT}/Chassis"}, UpdateService={"@odata.id": f"{ROOT}/UpdateService"},
                  SessionService={"@odata.id": f"{ROOT}/SessionService"},
                  AccountService={"@odata.id": f"{ROOT}/AccountService"},
                  Links={"Sessions": {"@odata.id": f"{ROOT}/SessionService/Sessions"}})


def gpu_temps(view: View) -> list[tuple[str, float]]:
    return [(f"GPU_SXM_{g['index'] + 1}", float(g["temp_C"])) for g in view.model.get("gpus") or []
            if g.get("present", True) and not g.get("fallen_off_bus")]


def sensor_health(reading: float, caution: float, critical: float) -> str:
    return "Critical" if reading >= critical else "Warning" if reading >= caution else "OK"


def sensors(view: View) -> dict[str, dict]:
    """Sensor Id -> Sensor resource: inlet and GPU temperatures, each PSU's input power."""
    plat = view.model.get("platform") or {}
    inlet, gpu = plat.get("inlet") or {}, plat.get("gpu_temp") or {}
    out = {}
    temps = [("Inlet_Temp", "Inlet air temperature", float(inlet.get("reading_C", 24.0)), inlet, "Intake")]
    temps += [(f"{n}_Temp", f"{n} temperature", t, gpu, "GPU") for n, t in gpu_temps(view)]
    for sid, name, reading, limits, context in temps:
        caution, critical = float(limits.get("upper_caution_C", 85)), float(limits.get("upper_critical_C", 90))
        out[sid] = _sensor(sid, name, ("Temperature", "Cel", context), reading,
                           {"UpperCaution": {"Reading": caution}, "UpperCritical": {"Reading": critical}},
                           sensor_health(reading, caution, critical))
    on = view.power_state == "On"
    working = [p for p in plat.get("psus") or [] if p.get("present", True)]
    for p in plat.get("psus") or []:
        watts = round(900.0 / max(1, len(working)), 1) if on and p in working else 0.0
        out[f"PSU{p['index']}_Input_Power"] = _sensor(
            f"PSU{p['index']}_Input_Power", f"PSU{p['index']} input power", ("Power", "W", "PowerSupply"), watts,
            {"UpperCritical": {"Reading": float(p["capacity_W"])}}, "OK" if p in working else "Critical")
    return out


def _sensor(sid: str, name: str, what: tuple[str, str, str], reading: float, thresholds: dict, health: str) -> dict:
    """A Sensor; ``what`` is (ReadingType, ReadingUnits, PhysicalContext)."""
    kind, units, context = what
    return _odata(f"{CHASSIS}/Sensors/{sid}", "#Sensor.v1_2_0.Sensor", Id=sid, Name=name, ReadingType=kind,
                  ReadingUnits=units, Reading=reading, PhysicalContext=context, Thresholds=thresholds,
                  Status={"State": "Enabled", "Health": health})


def psus(view: View) -> dict[str, dict]:
    out = {}
    for p in (view.model.get("platform") or {}).get("psus") or []:
        pid = f"PSU_{p['index']}"
        present = p.get("present", True)
        out[pid] = _odata(f"{CHASSIS}/PowerSubsystem/PowerSupplies/{pid}", "#PowerSupply.v1_5_0.PowerSupply",
                          Id=pid, Name=f"Power supply {p['index']}", Model=p.get("model"),
                          FirmwareVersion=p.get("firmware"), PowerCapacityWatts=float(p["capacity_W"]),
                          Status={"State": "Enabled" if present else "Absent",
                                  "Health": p.get("health", "OK") if present else "Critical"})
    return out


def fans(view: View) -> dict[str, dict]:
    out = {}
    for f in (view.model.get("platform") or {}).get("fans") or []:
        fid = f"Fan_{f['index']}"
        rpm = int(f["speed_RPM"])
        out[fid] = _odata(f"{CHASSIS}/ThermalSubsystem/Fans/{fid}", "#Fan.v1_3_0.Fan", Id=fid,
                          Name=f"Fan {f['index']}", PhysicalContext="SystemBoard",
                          SpeedPercent={"Reading": round(100.0 * rpm / int(f["max_RPM"]), 1), "SpeedRPM": float(rpm)},
                          Status={"State": "Enabled", "Health": f.get("health", "OK")})
    return out


def firmware(view: View) -> dict[str, dict]:
    """FirmwareInventory member Id -> SoftwareInventory resource (module docstring for the names)."""
    m, plat = view.model, view.model.get("platform") or {}
    rows: list[tuple[str, str, str | None, str]] = [
        ("HostBMC_0", "BMC firmware", str((m.get("bmc") or {}).get("firmware_revision")), "OK"),
        ("HostBIOS_0", "System BIOS", str((m.get("bios") or {}).get("version")), "OK")]
    rows += [(k, f"CPLD {k.split('_')[0][4:] or 'MB'}", v, "OK") for k, v in (plat.get("cpld") or {}).items()]
    rows += [(k, "HGX HMC" if "BMC" in k else "HGX FPGA", v, "OK") for k, v in (plat.get("hgx_firmware") or {}).items()]
    for g in m.get("gpus") or []:
        gone = g.get("fallen_off_bus") or g.get("lost") or not g.get("present", True)
        rows.append((f"HGX_FW_GPU_SXM_{g['index'] + 1}", f"GPU SXM {g['index'] + 1} VBIOS", g.get("vbios_version"),
                     "Critical" if gone else "OK"))
        if g.get("inforom_image_version"):
            rows.append((f"HGX_InfoROM_GPU_SXM_{g['index'] + 1}", f"GPU SXM {g['index'] + 1} InfoROM",
                         g["inforom_image_version"], "Critical" if gone else "OK"))
    rows += [(f"HGX_FW_NVSwitch_{s['index']}", f"NVSwitch {s['index']}", s["firmware"], "OK")
             for s in plat.get("nvswitches") or []]
    rows += [(f"CX7_{i}", f"{h['name']} firmware", h.get("fw_ver"), "OK") for i, h in enumerate(m.get("hcas") or [])]
    rows += [(f"PSU_{p['index']}", f"Power supply {p['index']} firmware", p.get("firmware"),
              "OK" if p.get("present", True) else "Critical") for p in plat.get("psus") or []]
    return {rid: _odata(f"{ROOT}/UpdateService/FirmwareInventory/{rid}", "#SoftwareInventory.v1_2_0.SoftwareInventory",
                        Id=rid, Name=name, Version=version or "N/A", Updateable=True,
                        Status={"State": "Enabled" if health == "OK" else "UnavailableOffline", "Health": health})
            for rid, name, version, health in rows}


def chassis_health(view: View) -> str:
    parts = [r["Status"]["Health"] for group in (sensors(view), psus(view), fans(view)) for r in group.values()]
    return worst(*parts)


def system_health(view: View) -> str:
    """Critical after a critical event (a critical SEL entry of an active fault), else the chassis' rollup."""
    events = [e["Severity"] for e in view.sel() if e.get("fault") and e.get("fault") != "sel_huge"]
    return worst(chassis_health(view), *events)
