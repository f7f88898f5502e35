// The staff monitoring dashboard (/monitoring/): requests and response times per interval drawn
// as inline SVG, hosts and services, captured exceptions with their details, notification checks
// and their status; everything read from the monitoring API, which answers staff only.
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
const CHART = { width: 640, height: 220, left: 56, right: 12, top: 14, bottom: 30 };

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

async function series(metric, period, interval) {
  const query = new URLSearchParams({ last: String(PERIODS[period].seconds), interval: String(interval) });
  const answer = await monitoring(`metric_data/${encodeURIComponent(metric)}/?${query}`);
  return answer.data.data;
}

// One entry per interval of the window; count and time are null where nothing was collected.
function intervalsOf(counts, times) {
  const timeRows = new Map(times.map((p) => [p.valid_from, p.data]));
  return counts.map((p) => {
    const rowsOfTime = timeRows.get(p.valid_from) || [];
    return {
      from: p.valid_from,
      to: p.valid_to,
      count: p.data.length ? total(p.data) : null,
      time: rowsOfTime.length ? weightedAverage(rowsOfTime) : null,
    };
  });
}

function svgNode(tag, attrs = {}, text) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = String(text);
  return node;
}

// The frame of a chart: title and description for assistive technology, axis, scale labels.
function chartFrame(id, title, desc, maximum, unit) {
  const { width, height, left, right, top, bottom } = CHART;
  const svg = svgNode('svg', {
    viewBox: `0 0 ${width} ${height}`, role: 'img', class: 'chart-svg',
    'aria-labelledby': `${id}-title`, 'aria-describedby': `${id}-desc`, id: `${id}-svg`,
  });
  svg.append(svgNode('title', { id: `${id}-title` }, title), svgNode('desc', { id: `${id}-desc` }, desc));
  const bottomY = height - bottom;
  svg.append(
    svgNode('line', { x1: left, y1: bottomY, x2: width - right, y2: bottomY, class: 'chart-axis' }),
    svgNode('line', { x1: left, y1: top, x2: left, y2: bottomY, class: 'chart-axis' }),
    svgNode('text', { x: left - 6, y: top + 4, class: 'chart-label', 'text-anchor': 'end' }, number(maximum, 1)),
    svgNode('text', { x: left - 6, y: bottomY, class: 'chart-label', 'text-anchor': 'end' }, '0'),
    svgNode('text', { x: left + 4, y: height - 8, class: 'chart-label' }, unit),
  );
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
  const svg = chartFrame('count-chart', title, desc, maximum, 'requests');
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
  const svg = chartFrame('time-chart', title, desc, maximum, 'ms');
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
  const [counts, times] = await Promise.all([
    series('request.count', period, interval), series('response.time', period, interval)]);
  if (asked !== trafficRequest) return;
  const intervals = intervalsOf(counts, times);
  drawCounts(intervals, period, interval);
  drawTimes(intervals, period, interval);
  fillTrafficTable(intervals, interval);
  section.dataset.period = period;
  section.dataset.interval = String(interval);
  section.dataset.ready = 'true';
}

function setupPeriods() {
  const buttons = [...document.querySelectorAll('.period-choice button')];
  for (const button of buttons) {
    button.addEventListener('click', () => {
      shownPeriod = button.dataset.period;
      for (const other of buttons) other.setAttribute('aria-pressed', String(other === button));
      showTraffic(shownPeriod).catch(failed);
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
    showServices().then(() => showTraffic(shownPeriod)), showExceptions(), showChecks(),
  ].map((job) => job.catch(failed));
  await Promise.all(sections);
  status.textContent = 'Monitoring data loaded.';
  byId('dashboard').dataset.ready = 'true';
}
