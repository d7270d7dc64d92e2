"""The InfiniBand fabric: switches, HCAs and cables, per plane (one subnet per rail).

``model`` holds the types (a ``Fabric`` of ``Plane``s of ``Switch``es, ``Hca``s and
``Link``s), leaf/spine roles told apart by what a switch connects, routes and degraded
links; ``discover`` builds a
plane from ``ibnetdiscover`` output (parser ``provision.parsers.ibnetdiscover``);
``localize`` finds the bad node, HCA or cable from group and pair test results. The fat-tree
synthesiser the simulator and the benches build fabrics with is the simulator's (``provision.sim.synth``).
"""
