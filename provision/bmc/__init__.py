"""Out of band: a node's BMC (baseboard management controller), reached from the controller.

``config`` (the inventory's BMC variables), ``redfish`` (DMTF's ``redfish`` library) and ``ipmi`` (``ipmitool``)
behind one ``client.connect``; ``transport`` answers the engine's ``bmc`` steps; ``power`` runs batched power
actions, each confirmed over SSH by a new boot id; ``access`` is the engine's ``OutOfBand``.
Nothing here is imported by the framework until a BMC is used.
"""
