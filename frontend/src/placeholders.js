// The picture of a resource without a thumbnail: a drawing of its kind (vector or raster dataset,
// document, map, geo app; the drawings are in app.css), so a card still says at a glance what it is.

const KINDS = ['vector', 'raster', 'document', 'map', 'geoapp'];

// The drawing's name for a resource: datasets by subtype, the other kinds by type.
export function placeholderKind(resource) {
  if (resource.resource_type === 'dataset') return resource.subtype === 'raster' ? 'raster' : 'vector';
  return KINDS.includes(resource.resource_type) ? resource.resource_type : 'document';
}

export function placeholder(resource) {
  const kind = placeholderKind(resource);
  const picture = document.createElement('span');
  picture.className = `thumb placeholder placeholder-${kind}`;
  picture.dataset.kind = kind;
  picture.setAttribute('aria-hidden', 'true');
  return picture;
}
