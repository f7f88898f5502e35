// The staff monitoring dashboard (/monitoring/): requests, response times and the error rate per
// interval drawn as inline SVG with labelled axes, requests and errors per service and per
// endpoint, hosts and services, captured exceptions with their details, notification checks and
// their status; everything read from the monitoring API, which answers staff only. The charts,
// the breakdown and the checks refresh on their own (every REFRESH_SECONDS, or ?refresh=N) until
// paused.
import { isStaff } from './account.js';
import { base, getJson } from './api.js';
import { el } from './dom.js';

const MONITORING = `${base}/monitoring/api`;
const SVG_NS = 'http://www.w3.org/2000/svg';
const PERIODS = {
  hour: { seconds: 3600, interval: 60, words: 'the last hour' },
  day: { seconds: 86400, interval: 3600, words: 'the last day' },
  week: { seconds: 7 * 86400, interval: 86400, words: 'the last week' },
};
// Periods are aligned from 00:00 each day: an interval must divide a day evenly and be a
// multiple of the period the data are collected in.
const DAY_DIVISORS = [60, 120, 300, 600, 900, 1200, 1800, 3600, 7200, 10800, 14400, 21600, 43200, 86400];
const CHART = { width: 640, height: 240, left: 64, right: 12, top: 14, bottom: 46 };
const REFRESH_SECONDS = 60;
const MIN_REFRESH_SECONDS = 5;
const TOP_ENDPOINTS = 10;

let collected = 60; // seconds; the services' check interval, read from the services list
let shownPeriod = 'hour';
let trafficRequest = 0; // the latest period asked for: older answers arriving late are dropped
let openedFrom = null; // the exception link whose details are shown

const monitoring = (path) => getJson(`${MONITORING}/${path}`);
const byId = (id) => document.getElementById(id);

function validInterval(nominal, every) {
  return DAY_DIVISORS.find((i) => i >= nominal && i % every === 0) || every;
}

function intervalWords(seconds) {
  if (seconds % 86400 === 0) return seconds === 86400 ? 'day' : `${seconds / 86400} days`;
  if (seconds % 3600 === 0) return seconds === 3600 ? 'hour' : `${seconds / 3600} hours`;
  return seconds === 60 ? 'minute' : `${seconds / 60} minutes`;
}

// "2026-11-26T23:09:00Z" as "2026-11-26 23:09 UTC", inside a <time> carrying the exact value.
function timeElement(stamp) {
  const text = typeof stamp === 'string' && stamp.length >= 16
    ? `${stamp.slice(0, 10)} ${stamp.slice(11, 16)} UTC` : String(stamp ?? '');
  return el('time', { datetime: typeof stamp === 'string' ? stamp : null }, text);
}

function number(value, digits = 0) {
  return Number(value).toLocaleString('en', { maximumFractionDigits: digits, minimumFractionDigits: 0 });
}

function cell(content) {
  const td = el('td');
  if (content instanceof Node) td.append(content);
  else td.textContent = String(content ?? '');
  return td;
}

function fillTable(id, rows) {
  byId(id).querySelector('tbody').replaceChildren(...rows.map((cells) => {
    const tr = el('tr');
    tr.append(...cells.map(cell));
    return tr;
  }));
}

// -- request charts -------------------------------------------------------------------------

function total(rows) {
  return rows.reduce((sum, row) => sum + Number(row.val), 0);
}

// An average over rows (services, labels) weighted by the samples behind each.
function weightedAverage(rows) {
  const samples = rows.reduce((sum, row) => sum + (Number(row.samples_count) || 0), 0);
  if (!samples) return rows.reduce((sum, row) => sum + Number(row.val), 0) / rows.length;
  return rows.reduce((sum, row) => sum + Number(row.val) * (Number(row.samples_count) || 0), 0) / samples;
}

async function series(metric, period, interval, extra = {}) {
  const query = new URLSearchParams({
    last: String(PERIODS[period].seconds), interval: String(interval), ...extra,
  });
  const answer = await monitoring(`metric_data/${encodeURIComponent(metric)}/?${query}`);
  return answer.data.data;
}

// One entry per interval of the window; count and time are null where nothing was collected.
function intervalsOf(counts, times, errors = []) {
  const timeRows = new Map(times.map((p) => [p.valid_from, p.data]));
  const errorRows = new Map(errors.map((p) => [p.valid_from, p.data]));
  return counts.map((p) => {
    const rowsOfTime = timeRows.get(p.valid_from) || [];
    return {
      from: p.valid_from,
      to: p.valid_to,
      count: p.data.length ? total(p.data) : null,
      time: rowsOfTime.length ? weightedAverage(rowsOfTime) : null,
      errors: total(errorRows.get(p.valid_from) || []),
    };
  });
}

function svgNode(tag, attrs = {}, text) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = String(text);
  return node;
}

// "2026-11-26T23:09:00Z" as the tick text of the time axis: the time of day, or the date for
// intervals of a day.
function tickText(stamp, interval) {
  if (typeof stamp !== 'string' || stamp.length < 16) return String(stamp ?? '');
  return interval >= 86400 ? stamp.slice(5, 10) : stamp.slice(11, 16);
}

// The frame of a chart: title and description for assistive technology, both axes with their
// titles, the value scale and the times of the first, middle and last intervals.
function chartFrame(id, title, desc, maximum, axis, intervals, interval) {
  const { width, height, left, right, top, bottom } = CHART;
  const svg = svgNode('svg', {
    viewBox: `0 0 ${width} ${height}`, role: 'img', class: 'chart-svg',
    'aria-labelledby': `${id}-title`, 'aria-describedby': `${id}-desc`, id: `${id}-svg`,
  });
  svg.append(svgNode('title', { id: `${id}-title` }, title), svgNode('desc', { id: `${id}-desc` }, desc));
  const bottomY = height - bottom;
  const middleY = (top + bottomY) / 2;
  svg.append(
    svgNode('line', { x1: left, y1: bottomY, x2: width - right, y2: bottomY, class: 'chart-axis' }),
    svgNode('line', { x1: left, y1: top, x2: left, y2: bottomY, class: 'chart-axis' }),
    svgNode('text', { x: left - 6, y: top + 4, class: 'chart-label', 'text-anchor': 'end' }, number(maximum, 1)),
    svgNode('text', { x: left - 6, y: bottomY, class: 'chart-label', 'text-anchor': 'end' }, '0'),
    svgNode('text', {
      x: 14, y: middleY, class: 'chart-label chart-axis-title y-axis-title', 'text-anchor': 'middle',
      transform: `rotate(-90 14 ${middleY})`,
    }, axis),
    svgNode('text', {
      x: (left + width - right) / 2, y: height - 6, class: 'chart-label chart-axis-title x-axis-title',
      'text-anchor': 'middle',
    }, `Time (UTC), per ${intervalWords(interval)}`),
  );
  const count = intervals.length;
  const ticks = count ? [...new Set([0, Math.floor((count - 1) / 2), count - 1])] : [];
  for (const index of ticks) {
    const { x, width: w } = slot(index, count);
    const anchor = index === 0 ? 'start' : (index === count - 1 ? 'end' : 'middle');
    const tx = anchor === 'start' ? x : (anchor === 'end' ? x + w : x + w / 2);
    svg.append(svgNode('text', { x: tx, y: bottomY + 16, class: 'chart-label x-tick', 'text-anchor': anchor },
      tickText(intervals[index].from, interval)));
  }
  return svg;
}

function slot(index, count) {
  const plot = CHART.width - CHART.left - CHART.right;
  return { x: CHART.left + (plot * index) / count, width: plot / count };
}

function scaleY(value, maximum) {
  const plot = CHART.height - CHART.top - CHART.bottom;
  return CHART.height - CHART.bottom - (maximum ? (plot * value) / maximum : 0);
}

function drawCounts(intervals, period, interval) {
  const withData = intervals.filter((i) => i.count !== null);
  const sum = withData.reduce((s, i) => s + i.count, 0);
  const maximum = Math.max(1, ...withData.map((i) => i.count));
  const title = `Requests per ${intervalWords(interval)}, ${PERIODS[period].words}`;
  const desc = `${number(sum)} requests in total; ${withData.length} of ${intervals.length} intervals `
    + `have data; the busiest had ${number(withData.length ? maximum : 0)}.`;
  const svg = chartFrame('count-chart', title, desc, maximum, 'Requests', intervals, interval);
  intervals.forEach((item, index) => {
    if (item.count === null) return;
    const { x, width } = slot(index, intervals.length);
    const y = scaleY(item.count, maximum);
    const bar = svgNode('rect', {
      x: x + width * 0.1, y, width: Math.max(width * 0.8, 1), height: CHART.height - CHART.bottom - y,
      class: 'chart-bar', 'data-from': item.from,
    });
    bar.append(svgNode('title', {}, `${item.from}: ${number(item.count)} requests`));
    svg.append(bar);
  });
  byId('count-chart').replaceChildren(svg);
  byId('count-caption').textContent = `${title}: ${desc}`;
}

function drawTimes(intervals, period, interval) {
  const withData = intervals.map((item, index) => ({ ...item, index })).filter((i) => i.time !== null);
  const values = withData.map((i) => i.time);
  const maximum = Math.max(1, ...values);
  const title = `Average response time per ${intervalWords(interval)}, ${PERIODS[period].words}`;
  const desc = withData.length
    ? `From ${number(Math.min(...values), 1)} to ${number(Math.max(...values), 1)} milliseconds `
      + `in the ${withData.length} of ${intervals.length} intervals with data.`
    : `No response was timed in the ${intervals.length} intervals.`;
  const svg = chartFrame('time-chart', title, desc, maximum, 'Milliseconds', intervals, interval);
  const points = withData.map((item) => {
    const { x, width } = slot(item.index, intervals.length);
    return { item, x: x + width / 2, y: scaleY(item.time, maximum) };
  });
  if (points.length > 1) {
    svg.append(svgNode('polyline', { points: points.map((p) => `${p.x},${p.y}`).join(' '), class: 'chart-line' }));
  }
  for (const { item, x, y } of points) {
    const dot = svgNode('circle', { cx: x, cy: y, r: 3.5, class: 'chart-point', 'data-from': item.from });
    dot.append(svgNode('title', {}, `${item.from}: ${number(item.time, 1)} ms`));
    svg.append(dot);
  }
  byId('time-chart').replaceChildren(svg);
  byId('time-caption').textContent = `${title}: ${desc}`;
}

// The share of requests answered with an error status (4xx, 5xx), per interval with requests.
function drawErrorRates(intervals, period, interval) {
  const rated = intervals.map((item, index) => ({ ...item, index }))
    .filter((i) => i.count)
    .map((i) => ({ ...i, rate: (100 * (i.errors || 0)) / i.count }));
  const maximum = Math.max(1, ...rated.map((i) => i.rate));
  const errors = rated.reduce((sum, i) => sum + (i.errors || 0), 0);
  const requests = rated.reduce((sum, i) => sum + i.count, 0);
  const title = `Error rate per ${intervalWords(interval)}, ${PERIODS[period].words}`;
  const desc = requests
    ? `${number(errors)} of ${number(requests)} requests (${number((100 * errors) / requests, 1)} %) were `
      + `answered with an error status; the worst interval had ${number(Math.max(0, ...rated.map((i) => i.rate)), 1)} %.`
    : `No request in the ${intervals.length} intervals.`;
  const svg = chartFrame('error-chart', title, desc, maximum, 'Errors (% of requests)', intervals, interval);
  for (const item of rated) {
    const { x, width } = slot(item.index, intervals.length);
    const y = scaleY(item.rate, maximum);
    const bar = svgNode('rect', {
      x: x + width * 0.1, y, width: Math.max(width * 0.8, 1), height: CHART.height - CHART.bottom - y,
      class: 'chart-bar chart-error-bar', 'data-from': item.from, 'data-errors': String(item.errors || 0),
    });
    bar.append(svgNode('title', {}, `${item.from}: ${number(item.errors || 0)} errors of ${number(item.count)} requests`));
    svg.append(bar);
  }
  byId('error-chart').replaceChildren(svg);
  byId('error-caption').textContent = `${title}: ${desc}`;
  byId('error-figure').dataset.errors = String(errors);
}

function fillTrafficTable(intervals, interval) {
  byId('traffic-table-caption').textContent = `Requests and average response time per ${intervalWords(interval)} `
    + '(intervals with data only)';
  fillTable('traffic-table', intervals.filter((i) => i.count !== null || i.time !== null).map((i) => [
    timeElement(i.from), i.count === null ? '0' : number(i.count), i.time === null ? '–' : number(i.time, 1),
  ]));
}

async function showTraffic(period) {
  const section = byId('traffic');
  const asked = ++trafficRequest;
  section.dataset.ready = 'false';
  const interval = validInterval(PERIODS[period].interval, collected);
  const [counts, times, errors] = await Promise.all([
    series('request.count', period, interval), series('response.time', period, interval),
    series('response.error.path', period, interval)]);
  if (asked !== trafficRequest) return;
  const intervals = intervalsOf(counts, times, errors);
  drawCounts(intervals, period, interval);
  drawTimes(intervals, period, interval);
  drawErrorRates(intervals, period, interval);
  fillTrafficTable(intervals, interval);
  section.dataset.period = period;
  section.dataset.interval = String(interval);
  section.dataset.ready = 'true';
}

// -- requests and errors per service and per endpoint ---------------------------------------

// Each row's value summed over the window, per key of the row (its event type or label).
function sumsBy(periods, key) {
  const sums = new Map();
  for (const p of periods) {
    for (const row of p.data) sums.set(row[key], (sums.get(row[key]) || 0) + Number(row.val));
  }
  return sums;
}

// The event types that name a service: each OWS service, and "other" (the API and the pages).
function serviceName(eventType) {
  if (eventType === 'other') return 'API and pages';
  return eventType.startsWith('OWS:') && eventType !== 'OWS:ALL' ? eventType.slice(4) : null;
}

function rate(errors, requests) {
  return requests ? `${number((100 * errors) / requests, 1)} %` : '–';
}

let breakdownRequest = 0;

async function showBreakdown(period) {
  const section = byId('breakdown');
  const asked = ++breakdownRequest;
  section.dataset.ready = 'false';
  const interval = validInterval(PERIODS[period].interval, collected);
  const byType = { group_by: 'event_type' };
  const [typeCounts, typeErrors, pathCounts, pathErrors] = await Promise.all([
    series('request.count', period, interval, byType), series('response.error.path', period, interval, byType),
    series('request.path', period, interval), series('response.error.path', period, interval)]);
  if (asked !== breakdownRequest) return;
  const requests = sumsBy(typeCounts, 'event_type');
  const errors = sumsBy(typeErrors, 'event_type');
  const services = [...requests].filter(([type]) => serviceName(type))
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  fillTable('service-breakdown', services.map(([type, n]) => [
    serviceName(type), number(n), number(errors.get(type) || 0), rate(errors.get(type) || 0, n)]));
  const paths = sumsBy(pathCounts, 'label');
  const failedPaths = sumsBy(pathErrors, 'label');
  const busiest = [...paths].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, TOP_ENDPOINTS);
  fillTable('endpoint-breakdown', busiest.map(([path, n]) => [
    el('span', { class: 'endpoint-path' }, path), number(n), number(failedPaths.get(path) || 0)]));
  byId('breakdown-period').textContent = `In ${PERIODS[period].words}.`;
  section.dataset.period = period;
  section.dataset.ready = 'true';
}

// -- auto-refresh ---------------------------------------------------------------------------

function refreshSeconds() {
  const asked = Number(new URLSearchParams(window.location.search).get('refresh'));
  return Number.isFinite(asked) && asked > 0 ? Math.max(MIN_REFRESH_SECONDS, asked) : REFRESH_SECONDS;
}

let refreshTimer = null;
let refreshes = 0;

async function refreshNow() {
  await Promise.all([showTraffic(shownPeriod), showBreakdown(shownPeriod), showChecks()]
    .map((job) => job.catch(failed)));
  refreshes += 1;
  const dashboard = byId('dashboard');
  dashboard.dataset.refreshes = String(refreshes);
  byId('refresh-note').textContent = `Refreshed at ${new Date().toISOString().slice(11, 19)} UTC.`;
}

function setupRefresh() {
  const seconds = refreshSeconds();
  const toggle = byId('refresh-toggle');
  const note = byId('refresh-note');
  const start = () => {
    refreshTimer = window.setInterval(refreshNow, seconds * 1000);
    toggle.textContent = 'Pause the auto-refresh';
    toggle.dataset.state = 'running';
    note.textContent = `The data refresh every ${seconds} seconds.`;
  };
  toggle.addEventListener('click', () => {
    if (refreshTimer) {
      window.clearInterval(refreshTimer);
      refreshTimer = null;
      toggle.textContent = 'Resume the auto-refresh';
      toggle.dataset.state = 'paused';
      note.textContent = 'The auto-refresh is paused.';
    } else {
      start();
      refreshNow();
    }
  });
  start();
}

function setupPeriods() {
  const buttons = [...document.querySelectorAll('.period-choice button')];
  for (const button of buttons) {
    button.addEventListener('click', () => {
      shownPeriod = button.dataset.period;
      for (const other of buttons) other.setAttribute('aria-pressed', String(other === button));
      showTraffic(shownPeriod).catch(failed);
      showBreakdown(shownPeriod).catch(failed);
    });
  }
}

// -- hosts and services ---------------------------------------------------------------------

async function showServices() {
  const [hostsAnswer, servicesAnswer] = await Promise.all([monitoring('hosts/'), monitoring('services/')]);
  fillTable('hosts-table', hostsAnswer.hosts.map((h) => [h.name, h.ip]));
  fillTable('services-table', servicesAnswer.services.map((s) => [
    s.name, s.type, s.host, s.last_check ? timeElement(s.last_check) : 'never', s.check_interval,
  ]));
  const requestServices = servicesAnswer.services.filter((s) => s.type === 'core' || s.type === 'mapserver');
  const intervals = requestServices.map((s) => Number(s.check_interval)).filter((n) => n > 0);
  if (intervals.length) collected = Math.max(...intervals);
  byId('services-section').dataset.ready = 'true';
}

// -- exceptions -----------------------------------------------------------------------------

const exceptionUrl = (id) => `${MONITORING}/exceptions/${encodeURIComponent(id)}/`;

function detailField(list, term, value) {
  const dd = el('dd');
  if (value instanceof Node) dd.append(value);
  else dd.textContent = value === null || value === undefined || value === '' ? '–' : String(value);
  list.append(el('dt', {}, term), dd);
}

function showExceptionDetail(detail) {
  const list = byId('exception-fields');
  list.replaceChildren();
  const request = detail.request || {};
  const http = request.request || {};
  const response = request.response || {};
  const client = request.client || {};
  detailField(list, 'Type', detail.error_type);
  detailField(list, 'Message', el('span', { id: 'exception-message', class: 'exception-message' },
    detail.error_message));
  detailField(list, 'Time', timeElement(detail.created));
  detailField(list, 'Service', detail.service && detail.service.name);
  detailField(list, 'Request', el('span', { id: 'exception-request' },
    [http.method, http.path].filter(Boolean).join(' ')));
  detailField(list, 'Host', http.host);
  detailField(list, 'Status', response.status);
  detailField(list, 'Response time (ms)', response.time);
  detailField(list, 'Client', client.ip);
  detailField(list, 'User agent', client.user_agent);
  byId('exception-trace').textContent = detail.error_data || '';
  byId('exception-detail-heading').textContent = `Exception ${detail.error_type || ''}`.trim();
  const panel = byId('exception-detail');
  panel.dataset.exception = String(detail.id);
  panel.hidden = false;
  byId('exception-detail-heading').focus();
}

async function openException(item, link) {
  openedFrom = link;
  try {
    showExceptionDetail(await monitoring(`exceptions/${encodeURIComponent(item.id)}/`));
  } catch (error) {
    failed(error);
  }
}

function exceptionEntry(item) {
  const link = el('a', { href: exceptionUrl(item.id), class: 'exception-link', 'data-id': item.id },
    item.error_type);
  link.addEventListener('click', (event) => {
    event.preventDefault();
    openException(item, link);
  });
  const li = el('li');
  li.append(link, document.createTextNode(` · ${(item.service && item.service.name) || ''} · `),
    timeElement(item.created));
  return li;
}

async function showExceptions() {
  const { exceptions } = await monitoring('exceptions/');
  byId('exceptions-list').replaceChildren(...exceptions.map(exceptionEntry));
  byId('exceptions-empty').hidden = exceptions.length > 0;
  byId('exceptions-section').dataset.ready = 'true';
}

function setupExceptionPanel() {
  byId('exception-close').addEventListener('click', () => {
    byId('exception-detail').hidden = true;
    if (openedFrom && openedFrom.isConnected) openedFrom.focus();
  });
}

// -- notification checks --------------------------------------------------------------------

function problemList(problems) {
  const ul = el('ul', { class: 'problems' });
  ul.append(...problems.map((p) => el('li', {}, p.message || p.description || p.name)));
  return ul;
}

async function showChecks() {
  const [notes, status] = await Promise.all([monitoring('notifications/'), monitoring('status/')]);
  const failing = new Map(status.data.map((entry) => [entry.check.id, entry.problems]));
  const checks = notes.data.checks || [];
  byId('health-level').textContent = notes.data.health_level;
  byId('checks-empty').hidden = checks.length > 0;
  byId('checks-table').hidden = checks.length === 0;
  fillTable('checks-table', checks.map((check) => {
    const problems = failing.get(check.id) || [];
    let state = 'OK';
    if (!check.active) state = 'Inactive';
    else if (problems.length) state = 'Failing';
    const badge = el('span', { class: `check-status check-${state.toLowerCase()}` }, state);
    return [check.name, check.description, check.severity, badge, problems.length ? problemList(problems) : '–'];
  }));
  byId('notifications-section').dataset.ready = 'true';
}

// -- page -----------------------------------------------------------------------------------

function failed(error) {
  const box = byId('dashboard-error');
  box.textContent = `The monitoring data could not be loaded (${error.message || error}).`;
  box.hidden = false;
}

export async function setupDashboard(signedIn) {
  const name = await signedIn;
  if (!name) {
    byId('dashboard-login').hidden = false;
    return;
  }
  if (!isStaff()) {
    byId('dashboard-forbidden').hidden = false;
    return;
  }
  byId('dashboard').hidden = false;
  const status = byId('dashboard-status');
  status.textContent = 'Loading the monitoring data…';
  setupPeriods();
  setupExceptionPanel();
  const sections = [
    showServices().then(() => Promise.all([showTraffic(shownPeriod), showBreakdown(shownPeriod)])),
    showExceptions(), showChecks(),
  ].map((job) => job.catch(failed));
  await Promise.all(sections);
  setupRefresh();
  status.textContent = 'Monitoring data loaded.';
  byId('dashboard').dataset.ready = 'true';
}
