// The picture of a resource without a thumbnail: an inline drawing of its kind (vector or raster
// dataset, document, map, geo app), so a card still says at a glance what it is.

const SVG = 'http://www.w3.org/2000/svg';
// Each kind's drawing on a 48 × 36 grid: the paths are stroked in the card's colour.
const DRAWINGS = {
  vector: ['M6 28 L14 10 L26 16 L40 6', 'M8 30 L20 24 L30 30 L42 22 L34 14 Z'],
  raster: ['M8 6 H40 V30 H8 Z', 'M8 14 H40 M8 22 H40 M16 6 V30 M24 6 V30 M32 6 V30'],
  document: ['M14 4 H30 L36 10 V32 H14 Z', 'M30 4 V10 H36', 'M18 16 H32 M18 21 H32 M18 26 H28'],
  map: ['M6 8 L17 4 L31 8 L42 4 V28 L31 32 L17 28 L6 32 Z', 'M17 4 V28 M31 8 V32'],
  geoapp: ['M6 6 H42 V30 H6 Z', 'M6 12 H42', 'M12 20 L18 16 L26 24 L34 18'],
};

// The drawing's name for a resource: datasets by subtype, the other kinds by type.
export function placeholderKind(resource) {
  if (resource.resource_type === 'dataset') return resource.subtype === 'raster' ? 'raster' : 'vector';
  return DRAWINGS[resource.resource_type] ? resource.resource_type : 'document';
}

export function placeholder(resource) {
  const kind = placeholderKind(resource);
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', '0 0 48 36');
  svg.setAttribute('class', `thumb placeholder placeholder-${kind}`);
  svg.setAttribute('aria-hidden', 'true');
  svg.setAttribute('focusable', 'false');
  svg.dataset.kind = kind;
  for (const d of DRAWINGS[kind]) {
    const path = document.createElementNS(SVG, 'path');
    path.setAttribute('d', d);
    svg.append(path);
  }
  return svg;
}
