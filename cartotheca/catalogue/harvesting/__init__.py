"""cartotheca.catalogue.harvesting: harvesters that copy a remote GeoNode, WMS or CSW into the catalogue.

    remote.py      what a remote offers (RemoteResource) and the one way to fetch from it (net.py)
    geonode.py, wms.py, csw.py     one module per harvester type, each listing a remote's resources
    registry.py    type name → harvester type
    harvesters.py  harvesters, harvestable resources and sessions: reading, writing, starting actions
    runs.py        the actions themselves: check availability, refresh the list, harvest
    local.py       turning a remote resource into (or updating) a local resource
    scheduling.py  due scheduled actions, claimed once whichever process looks
"""
