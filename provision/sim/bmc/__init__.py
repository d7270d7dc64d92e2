"""The simulated rack's BMCs: a Redfish service (and an IPMI LAN endpoint) per node, served by one daemon per rack.

Shaped after the BMC of an NVIDIA DGX H100/H200 (DGX H100 user guide, "Redfish APIs Support",
https://docs.nvidia.com/dgx/dgxh100-user-guide/redfish-api-supp.html: DSP0266, Basic authentication and sessions,
PSU/fan/sensor health, firmware inventory) and OpenBMC's bmcweb (resource layout, the OpenBMC message registry's
SEL MessageIds, 1,000-member pages of log entries); the protocol's behavior follows DMTF DSP0266 (service root and
$metadata readable without authentication, X-Auth-Token sessions, error bodies). ``resources`` builds the tree from
the node's hardware model, ``service`` serves it over HTTPS, ``daemon`` runs one service per node of a rack and
powers nodes through ``rack``; ``provision/sim/README.md`` ("BMCs") describes how.
"""
