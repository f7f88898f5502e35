// Polygons that cross ±180° drawn on a flat lon/lat map without a line across it. Natural
// Earth's Russia, Fiji and Antarctica jump from +180 to -180 inside a ring, and a box whose west
// lies east of its east wraps round the globe: each ring is unwrapped into continuous longitudes,
// then the polygon is repeated 360° to the east or west as far as it reaches past the map's edge,
// so every part shows where it lies and no edge runs across the map.
import MultiPolygon from 'ol/geom/MultiPolygon.js';
import Polygon from 'ol/geom/Polygon.js';

function unwrapRing(ring) {
  const out = [];
  let shift = 0;
  let previous = null;
  for (const [x, y] of ring) {
    let lon = x + shift;
    if (previous !== null && lon - previous > 180) {
      shift -= 360;
      lon -= 360;
    } else if (previous !== null && lon - previous < -180) {
      shift += 360;
      lon += 360;
    }
    out.push([lon, y]);
    previous = lon;
  }
  // A ring round a pole (Antarctica) ends a whole turn from where it began: close it over the pole.
  const first = out[0];
  const last = out[out.length - 1];
  if (out.length > 1 && Math.abs(last[0] - first[0]) >= 180) {
    const meanLat = out.reduce((sum, p) => sum + p[1], 0) / out.length;
    const pole = meanLat < 0 ? -90 : 90;
    out.push([last[0], pole], [first[0], pole], [first[0], first[1]]);
  }
  return out;
}

function lonRange(ring) {
  let min = Infinity;
  let max = -Infinity;
  for (const [x] of ring) {
    min = Math.min(min, x);
    max = Math.max(max, x);
  }
  return [min, max];
}

const shifted = (ring, by) => ring.map(([x, y]) => [x + by, y]);

function crosses(rings) {
  return rings.some((ring) => ring.some(([x], i) => x < -180 || x > 180
    || (i > 0 && Math.abs(x - ring[i - 1][0]) > 180)));
}

// One polygon's rings (outer first) as the polygons that draw it between -180 and 180.
export function wrapPolygon(rings) {
  if (!crosses(rings)) return [rings];
  const outer = unwrapRing(rings[0]);
  const [west, east] = lonRange(outer);
  const middle = (west + east) / 2;
  const holes = rings.slice(1).map((ring) => {
    const hole = unwrapRing(ring);
    const [hw, he] = lonRange(hole);
    return shifted(hole, 360 * Math.round((middle - (hw + he) / 2) / 360));
  });
  const polygon = [outer, ...holes];
  const copies = [];
  for (const by of [-720, -360, 0, 360, 720]) {
    if (west + by < 180 && east + by > -180) copies.push(polygon.map((ring) => shifted(ring, by)));
  }
  return copies;
}

// A Polygon or MultiPolygon in lon/lat, as one that draws right on a flat map.
export function wrapGeometry(geometry) {
  const type = geometry.getType();
  if (type !== 'Polygon' && type !== 'MultiPolygon') return geometry;
  const polygons = type === 'Polygon' ? [geometry.getCoordinates()] : geometry.getCoordinates();
  if (!polygons.some(crosses)) return geometry;
  return new MultiPolygon(polygons.flatMap(wrapPolygon));
}

// A box [west, south, east, north] in degrees (west > east: it crosses the antimeridian).
export function boxGeometry([west, south, east, north]) {
  const end = east < west ? east + 360 : east;
  const ring = [[west, south], [west, north], [end, north], [end, south], [west, south]];
  const parts = wrapPolygon([ring]);
  return parts.length === 1 ? new Polygon(parts[0]) : new MultiPolygon(parts);
}
