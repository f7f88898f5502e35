"""cartotheca.api.schemas: the wire shapes; GeoNode envelopes, field names and links live here only."""
