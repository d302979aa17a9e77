// An MCP client on the official TypeScript SDK, run against toolhost's MCP
// server by core/api's TestMCPTypeScriptClient: a second client, not built
// on the Go SDK the server uses, to check the wire format.
//
//   node client.mjs BASE_URL TOKEN [AGENT]
//   (or TOOLHOST_URL, TOOLHOST_TOKEN, TOOLHOST_AGENT in the environment)
//
// It prints one JSON object per step on stdout ({"step": ..., ...}). In the
// agent's session it prints {"step":"session","id":...} and waits for a
// line "moved" on stdin: the caller moves the session to its Reporting
// state in between (POST /v1/sessions/{id}/state). Any failed expectation
// exits 1 with its reason on stderr.

import readline from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const base = (process.argv[2] ?? process.env.TOOLHOST_URL ?? '').replace(/\/+$/, '');
const token = process.argv[3] ?? process.env.TOOLHOST_TOKEN ?? '';
const agent = process.argv[4] ?? process.env.TOOLHOST_AGENT ?? 'Helper';
if (!base || !token) {
  console.error('usage: node client.mjs BASE_URL TOKEN [AGENT] (or TOOLHOST_URL, TOOLHOST_TOKEN, TOOLHOST_AGENT)');
  process.exit(2);
}

const BLOCKS_MIME = 'application/vnd.toolhost.blocks+json';
const WAIT_MS = 10_000;

let current = 'start';

class Failure extends Error {}

function fail(msg, got) {
  const detail = got === undefined ? '' : `; got ${JSON.stringify(got)}`;
  throw new Failure(`step ${current}: ${msg}${detail}`);
}

function expect(cond, msg, got) {
  if (!cond) fail(msg, got);
}

function emit(step, fields = {}) {
  process.stdout.write(JSON.stringify({ step, ...fields }) + '\n');
}

// step runs one step: its name is in any failure, and its fields go out
// as one line.
async function step(name, f) {
  current = name;
  const fields = (await f()) ?? {};
  emit(name, fields);
  return fields;
}

function deadline(ms, what) {
  let timer;
  const p = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Failure(`step ${current}: no ${what} within ${ms / 1000} s`)), ms);
  });
  return { p, clear: () => clearTimeout(timer) };
}

async function within(ms, what, promise) {
  const d = deadline(ms, what);
  try {
    return await Promise.race([promise, d.p]);
  } finally {
    d.clear();
  }
}

// Lines on stdin, read as they come.
const lines = [];
const lineWaiters = [];
const rl = readline.createInterface({ input: process.stdin });
rl.on('line', (line) => {
  const w = lineWaiters.shift();
  if (w) w(line.trim());
  else lines.push(line.trim());
});

function nextLine() {
  if (lines.length > 0) return Promise.resolve(lines.shift());
  return new Promise((resolve) => lineWaiters.push(resolve));
}

// connect opens a session; label names it in the SDK's error reports,
// which are not failures once the session was closed on purpose (the
// client's GET stream is aborted then).
async function connect(label, path) {
  const url = new URL(base + path);
  const transport = new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: 'toolhost-ts-test', version: '1.0.0' });
  const conn = { client, transport, closing: false };
  client.onerror = (err) => {
    if (!conn.closing) console.error(`client error (${label}, during ${current}): ${err?.message ?? err}`);
  };
  await client.connect(transport);
  return conn;
}

function texts(res) {
  return (res.content ?? []).filter((c) => c.type === 'text').map((c) => c.text);
}

function names(tools) {
  return tools.map((t) => t.name);
}

function same(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}

async function tenantScenario() {
  current = 'tenant.connect';
  const conn = await connect('tenant', '/mcp');
  const { client, transport } = conn;
  await step('tenant.connect', () => {
    const info = client.getServerVersion();
    const caps = client.getServerCapabilities();
    expect(info?.name === 'toolhost', 'serverInfo.name is toolhost', info);
    expect(caps?.tools?.listChanged === true, 'the tools capability has listChanged', caps);
    return { server: info.name, protocolVersion: transport.protocolVersion, sessionId: transport.sessionId ?? null };
  });

  await step('tenant.tools/list', async () => {
    const { tools } = await client.listTools();
    const got = names(tools);
    for (const want of ['echo', 'boom', 'nap', 'report']) {
      expect(got.includes(want), `tools/list lists ${want}`, got);
    }
    const echo = tools.find((t) => t.name === 'echo');
    expect(echo.inputSchema?.type === 'object', 'echo has an object inputSchema', echo.inputSchema);
    expect(echo.inputSchema?.properties?.text !== undefined, 'echo\'s inputSchema has the property text', echo.inputSchema);
    expect(same(echo.inputSchema?.required ?? [], ['text']), 'echo requires text only', echo.inputSchema?.required);
    expect(echo.title === 'Echo', 'echo\'s title is its object_name', echo.title);
    return { tools: got };
  });

  await step('tenant.call echo', async () => {
    const res = await client.callTool({ name: 'echo', arguments: { text: 'hi', times: 2 } });
    expect(res.isError === false || res.isError === undefined, 'echo succeeds', res);
    expect(same(res.structuredContent, { echo: 'hihi' }), 'structuredContent is {"echo":"hihi"}', res.structuredContent);
    expect(same(JSON.parse(texts(res)[0] ?? 'null'), { echo: 'hihi' }), 'the first text is the result as JSON', res.content);
    expect(res._meta?.['toolhost/call']?.success === true, '_meta["toolhost/call"].success is true', res._meta);
    return { isError: res.isError ?? false, structuredContent: res.structuredContent };
  });

  await step('tenant.call boom', async () => {
    const res = await client.callTool({ name: 'boom', arguments: {} });
    expect(res.isError === true, 'boom is a result with isError', res);
    expect(texts(res).some((t) => t.includes('kaboom')), 'the error text says kaboom', res.content);
    return { isError: res.isError, text: texts(res)[0] };
  });

  await step('tenant.call echo bad args', async () => {
    let res;
    try {
      res = await client.callTool({ name: 'echo', arguments: { txt: 'x' } });
    } catch (err) {
      fail(`invalid arguments must be a result with isError, not a protocol error: ${err?.message ?? err}`);
    }
    expect(res.isError === true, 'invalid arguments are a result with isError', res);
    expect(texts(res).length > 0, 'the refusal says why', res.content);
    return { isError: res.isError, text: texts(res)[0] };
  });

  await step('tenant.close', async () => {
    conn.closing = true;
    await client.close();
  });
}

async function agentScenario() {
  current = 'agent.connect';
  const conn = await connect('agent', `/mcp/agents/${encodeURIComponent(agent)}?var.Name=Ann`);
  const { client, transport } = conn;
  await step('agent.connect', () => {
    const instructions = client.getInstructions();
    expect(instructions === 'Help Ann politely. Hello Ann!', 'the instructions are filled from the variables and the init skill', instructions);
    expect(typeof transport.sessionId === 'string' && transport.sessionId !== '', 'the server gave an Mcp-Session-Id', transport.sessionId);
    return { instructions, protocolVersion: transport.protocolVersion };
  });

  await step('agent.tools/list', async () => {
    const { tools } = await client.listTools();
    const got = names(tools);
    const titles = tools.map((t) => t.title);
    expect(same(got, ['echo', 'nap', 'boom', 'send_chat_message']), 'the Greeting state\'s tools, in order', got);
    expect(same(titles, ['Echo', 'Nap', 'Boom', 'SendChatMessage']), 'the titles are the object_names', titles);
    return { tools: got, titles };
  });

  await step('agent.call report early', async () => {
    const res = await client.callTool({ name: 'report', arguments: { n: 1 } });
    expect(res.isError === true, 'a tool of another state is refused with isError', res);
    return { isError: res.isError, text: texts(res)[0] };
  });

  // The handler is set before the caller moves the state, so a
  // notification that comes before "moved" is not missed.
  let changed = 0;
  let onChanged;
  const listChanged = new Promise((resolve) => { onChanged = resolve; });
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    changed++;
    onChanged();
  });

  current = 'session';
  emit('session', { id: transport.sessionId });
  const line = await within(30_000, 'line "moved" on stdin', nextLine());
  expect(line === 'moved', 'the caller answers "moved"', line);

  await step('agent.list_changed', async () => {
    await within(WAIT_MS, 'notifications/tools/list_changed', listChanged);
    return { notifications: changed };
  });

  await step('agent.tools/list after', async () => {
    const { tools } = await client.listTools();
    const got = names(tools);
    const titles = tools.map((t) => t.title);
    expect(same(got, ['report', 'finish_session']), 'the Reporting state\'s tools, in order', got);
    expect(same(titles, ['Report', 'FinishSession']), 'the titles are the object_names', titles);
    const report = tools.find((t) => t.name === 'report');
    expect(report.annotations?.readOnlyHint === false, 'report (side_effects) is not read-only', report.annotations);
    return { tools: got, titles };
  });

  await step('agent.call report', async () => {
    const res = await client.callTool({ name: 'report', arguments: { n: 3 } });
    expect(res.isError === false || res.isError === undefined, 'report succeeds', res);
    const first = res.content?.[0];
    expect(first?.type === 'text', 'the first content item is text', first);
    let parsed;
    try {
      parsed = JSON.parse(first.text);
    } catch {
      fail('the first text is JSON', first.text);
    }
    expect(String(parsed?.filed) === '3', 'the first text is the output mapping {"filed": 3}', parsed);
    expect(texts(res).includes('3 items filed'), 'the result_template\'s text follows', texts(res));
    const blocks = (res.content ?? []).find((c) => c.type === 'resource');
    expect(blocks !== undefined, 'a content item of type resource', res.content);
    expect(blocks.resource?.mimeType === BLOCKS_MIME, `the resource is ${BLOCKS_MIME}`, blocks.resource);
    let body;
    try {
      body = JSON.parse(blocks.resource.text);
    } catch {
      fail('the blocks resource\'s text is JSON', blocks.resource.text);
    }
    expect(Array.isArray(body?.blocks) && body.blocks.length > 0, 'the resource holds the call\'s blocks', body);
    expect(Array.isArray(res._meta?.['toolhost/blocks']), '_meta["toolhost/blocks"] holds the blocks too', res._meta);
    return { isError: res.isError ?? false, first: parsed, texts: texts(res), resource: { uri: blocks.resource.uri, mimeType: blocks.resource.mimeType } };
  });

  await step('agent.terminate', async () => {
    const id = transport.sessionId;
    conn.closing = true;
    await transport.terminateSession();
    expect(transport.sessionId === undefined, 'the transport forgot the session after DELETE', transport.sessionId);
    return { id };
  });

  await step('agent.close', async () => {
    await client.close();
  });
}

try {
  await tenantScenario();
  await agentScenario();
  emit('done');
  rl.close();
  process.exit(0);
} catch (err) {
  if (err instanceof Failure) {
    console.error(`FAIL ${err.message}`);
  } else {
    console.error(`FAIL step ${current}: ${err?.stack ?? err}`);
  }
  rl.close();
  process.exit(1);
}
