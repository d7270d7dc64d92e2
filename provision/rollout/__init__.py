"""Install methods where the nodes do the work (``provision install --method local|image``): ``methods`` fans out,
``steps`` is one node's SSH commands, ``bundle`` what is shipped, ``node_side`` what runs on the node."""
