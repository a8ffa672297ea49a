#!/usr/bin/env node
// Conformance of llmload-server's Anthropic Messages API (POST /v1/messages) with the official
// `@anthropic-ai/sdk` npm package (version pinned in package.json, installed with
// `npm ci --prefix tests/conformance`).
//   node anthropic_sdk.js <path to llmload-server>
// Starts the server (fixed latency model, --port 0), drives it through the SDK: messages.create
// streamed and not, messages.stream with thinking (its text and thinking events, finalMessage),
// the usage and stop reasons, the errors (400, 404, 529 by an injected fault) as the SDK's error
// classes, tool use (a tool_use block whose input is the object, streamed as input_json_delta into
// finalMessage(), tool_result turns) and structured outputs (output_config.format, output_format);
// a second server with --api-key checks x-api-key (wrong: AuthenticationError; right: served).
// Exit status 0 only if every check passed; each failure names what differed.
"use strict";
const path = require("path");

const INSTALL_HINT = "run `npm ci --prefix tests/conformance` (scripts/setup.sh does it)";
let Anthropic;
let SDK_VERSION;
try {
  Anthropic = require(path.join(__dirname, "node_modules", "@anthropic-ai", "sdk")).default;
  SDK_VERSION = require(path.join(__dirname, "node_modules", "@anthropic-ai", "sdk", "package.json")).version;
} catch (e) {
  console.error(`FAIL: the @anthropic-ai/sdk npm package is not installed in tests/conformance: ${INSTALL_HINT}`);
  process.exit(2);
}

const { MODEL, check, checkEq, words, startServer, stopServer, failures, checkCount } = require("./harness");

function client(port, apiKey = "unused-no-auth", headers = {}) {
  return new Anthropic({ baseURL: `http://127.0.0.1:${port}`, apiKey, maxRetries: 0, timeout: 15000,
                         defaultHeaders: headers });
}

function checkLlmload(obj, what) {
  check(obj && obj.llmload && typeof obj.llmload.first_token_s === "number", `${what}: carries the "llmload" object`);
}

async function expectApiError(promise, ErrorClass, status, what) {
  try {
    await promise;
    check(false, `${what}: no error was raised`);
    return undefined;
  } catch (e) {
    check(e instanceof ErrorClass, `${what}: expected ${ErrorClass.name}, got ${e && e.constructor && e.constructor.name}: ${e}`);
    check(e && e.status === status, `${what}: expected status ${status}, got ${e && e.status}`);
    return e;
  }
}

const PROMPT = [{ role: "user", content: "Tell me about the harbour" }];

async function testCreate(c) {
  const msg = await c.messages.create({ model: MODEL, max_tokens: 5, messages: PROMPT, system: "be brief" });
  check(msg.id.startsWith("msg_"), `message id prefix: ${msg.id}`);
  checkEq(msg.type, "message", "message type");
  checkEq(msg.role, "assistant", "message role");
  checkEq(msg.content.map((b) => b.type), ["text"], "content blocks without thinking");
  checkEq(words(msg.content[0].text), 5, "text words");
  checkEq(msg.stop_reason, "max_tokens", "stop_reason at max_tokens");
  checkEq(msg.usage.input_tokens + msg.usage.cache_read_input_tokens, 2 + 5, "usage input tokens (uncached + cache reads)");
  checkEq(msg.usage.output_tokens, 5, "usage output_tokens");
  checkLlmload(msg, "message body");

  const answered = await c.messages.create({ model: MODEL, max_tokens: 64,
                                             messages: [{ role: "user", content: "What is 6 * 7?" }] });
  checkEq(answered.stop_reason, "end_turn", "stop_reason after an answer");
  check(/42/.test(answered.content[0].text), `the answer: ${answered.content[0].text}`);

  const thinking = await c.messages.create({ model: MODEL, max_tokens: 8, messages: PROMPT,
                                             thinking: { type: "enabled", budget_tokens: 3 } });
  checkEq(thinking.content.map((b) => b.type), ["thinking", "text"], "content blocks with thinking");
  checkEq(words(thinking.content[0].thinking), 3, "thinking words (budget_tokens caps them)");
  check(typeof thinking.content[0].signature === "string" && thinking.content[0].signature.length > 0, "thinking signature");
  checkEq(words(thinking.content[1].text), 5, "text words after thinking");
  checkEq(thinking.usage.output_tokens, 8, "output_tokens include thinking");
  checkEq(thinking.usage.output_tokens_details && thinking.usage.output_tokens_details.thinking_tokens, 3,
          "usage.output_tokens_details.thinking_tokens");
  check(thinking.llmload.first_output_token_s > thinking.llmload.first_token_s, "llmload.first_output_token_s after thinking");
  return thinking;
}

async function testStream(c, expected) {
  const stream = c.messages.stream({ model: MODEL, max_tokens: 8, messages: PROMPT,
                                     thinking: { type: "enabled", budget_tokens: 3 } });
  let text = "";
  let thinking = "";
  let signature = null;
  stream.on("text", (delta) => (text += delta));
  stream.on("thinking", (delta) => (thinking += delta));
  stream.on("signature", (s) => (signature = s));
  const final = await stream.finalMessage();
  checkEq(thinking, expected.content[0].thinking, "messages.stream thinking events = the body's thinking");
  checkEq(text, expected.content[1].text, "messages.stream text events = the body's text");
  checkEq(signature, expected.content[0].signature, "messages.stream signature");
  checkEq(final.content.map((b) => b.type), ["thinking", "text"], "messages.stream finalMessage blocks");
  checkEq(final.content[1].text, text, "finalMessage text");
  checkEq(final.stop_reason, "max_tokens", "finalMessage stop_reason (from message_delta)");
  checkEq(final.usage.output_tokens, 8, "finalMessage usage.output_tokens (from message_delta)");
  checkEq(final.usage.output_tokens_details && final.usage.output_tokens_details.thinking_tokens, 3,
          "finalMessage usage thinking_tokens");
  checkEq(await stream.finalText(), text, "finalText");

  // create({stream: true}): the raw events as the SDK yields them (ping is dropped by the SDK).
  const raw = await c.messages.create({ model: MODEL, max_tokens: 3, messages: PROMPT, stream: true });
  const types = [];
  for await (const event of raw) types.push(event.type);
  checkEq(types, ["message_start", "content_block_start", "content_block_delta", "content_block_delta",
                  "content_block_delta", "content_block_stop", "message_delta", "message_stop"],
          "raw stream event types");
}

const WEATHER = {
  type: "object",
  properties: { city: { type: "string" }, days: { type: "integer", minimum: 1, maximum: 7 } },
  required: ["city", "days"],
};
const TOOLS = [{ name: "get_weather", description: "weather", input_schema: WEATHER }];

function checkWeatherInput(input, what) {
  check(input && typeof input.city === "string", `${what}: input.city is a string: ${JSON.stringify(input)}`);
  check(input && Number.isInteger(input.days) && input.days >= 1 && input.days <= 7,
        `${what}: input.days in [1, 7]: ${JSON.stringify(input)}`);
}

async function testToolUse(c) {
  const messages = [{ role: "user", content: "What is the weather in Paris?" }];
  const msg = await c.messages.create({ model: MODEL, max_tokens: 64, messages, tools: TOOLS });
  checkEq(msg.stop_reason, "tool_use", "tool_use stop_reason");
  const block = msg.content[0];
  checkEq(block && block.type, "tool_use", "tool_use block");
  if (!block) return;
  check(block.id.startsWith("toolu_"), `tool_use id: ${block.id}`);
  checkEq(block.name, "get_weather", "tool_use name");
  checkWeatherInput(block.input, "tool_use body");

  // messages.stream(): input_json_delta events accumulate into the block's input object.
  const stream = c.messages.stream({ model: MODEL, max_tokens: 64, messages, tools: TOOLS,
                                     thinking: { type: "enabled", budget_tokens: 3 } });
  let partial = "";
  stream.on("inputJson", (delta) => (partial += delta));
  const final = await stream.finalMessage();
  checkEq(final.content.map((b) => b.type), ["thinking", "tool_use"], "messages.stream: thinking, then tool_use");
  const streamed = final.content[1];
  check(streamed && typeof streamed.input === "object" && !Array.isArray(streamed.input),
        `finalMessage tool_use input is an object: ${JSON.stringify(streamed && streamed.input)}`);
  if (streamed) {
    checkWeatherInput(streamed.input, "finalMessage tool_use");
    checkEq(JSON.parse(partial), streamed.input, "inputJson deltas concatenate to the input");
  }
  checkEq(final.stop_reason, "tool_use", "finalMessage stop_reason");

  // The agent's next turn: the tool_use block and its tool_result sent back.
  const next = await c.messages.create({
    model: MODEL, max_tokens: 64, tools: TOOLS, tool_choice: { type: "none" },
    messages: [{ role: "user", content: "What is 6 * 7?" }, { role: "assistant", content: [block] },
               { role: "user", content: [{ type: "tool_result", tool_use_id: block.id, content: "sunny" }] }],
  });
  checkEq(next.content[0].type, "text", "tool_choice none after a tool_result: text");

  // Structured outputs: output_config.format (this SDK's field) and the beta's output_format.
  for (const [field, value] of [["output_config", { format: { type: "json_schema", schema: WEATHER } }],
                                ["output_format", { type: "json_schema", schema: WEATHER }]]) {
    const structured = await c.messages.create({ model: MODEL, max_tokens: 64, messages, [field]: value });
    checkEq(structured.content[0].type, "text", `${field}: a text block`);
    checkWeatherInput(JSON.parse(structured.content[0].text), `${field} JSON answer`);
  }
  await expectApiError(c.messages.create({ model: MODEL, max_tokens: 8, messages,
                                           tools: [{ name: "x", input_schema: WEATHER }],
                                           tool_choice: { type: "tool", name: "nope" } }),
                       Anthropic.BadRequestError, 400, "tool_choice naming an unknown tool");
}

async function testErrors(port) {
  const c = client(port);
  const bad = await expectApiError(c.messages.create({ model: MODEL, max_tokens: 5, messages: [] }),
                                   Anthropic.BadRequestError, 400, "empty messages");
  if (bad) checkEq(bad.error && bad.error.error && bad.error.error.type, "invalid_request_error", "400 error type");
  await expectApiError(c.messages.create({ model: MODEL, max_tokens: 5, messages: PROMPT,
                                           thinking: { type: "enabled", budget_tokens: 5 } }),
                       Anthropic.BadRequestError, 400, "budget_tokens not below max_tokens");
  const missing = await expectApiError(c.messages.create({ model: "claude-nope", max_tokens: 5, messages: PROMPT }),
                                       Anthropic.NotFoundError, 404, "unknown model");
  if (missing) checkEq(missing.error && missing.error.error && missing.error.error.type, "not_found_error", "404 type");
  const faulty = client(port, "unused-no-auth", { "X-Llmload-Fault": "error=529" });
  await expectApiError(faulty.messages.create({ model: MODEL, max_tokens: 5, messages: PROMPT }),
                       Anthropic.InternalServerError, 529, "injected 529 (overloaded_error)");
  const streamFault = client(port, "unused-no-auth", { "X-Llmload-Fault": "error=529" });
  await expectApiError((async () => {
    const s = streamFault.messages.stream({ model: MODEL, max_tokens: 5, messages: PROMPT });
    await s.finalMessage();
  })(), Anthropic.InternalServerError, 529, "injected 529 on a stream");
}

async function testAuth(bin) {
  let server;
  try {
    server = await startServer(bin, ["--latency-model", "fixed", "--ttft", "5ms", "--itl", "1ms", "--port", "0",
                                     "--api-key", "sk-ant-test"]);
  } catch (e) {
    check(false, `llmload-server did not start with --api-key: ${e.message}`);
    return;
  }
  try {
    const wrong = await expectApiError(client(server.port, "wrong-key").messages.create({ model: MODEL, max_tokens: 2,
                                                                                            messages: PROMPT }),
                                       Anthropic.AuthenticationError, 401, "wrong x-api-key");
    if (wrong) check(!/wrong-key|sk-ant-test/.test(wrong.message), `the 401 never echoes a key: ${wrong.message}`);
    const ok = await client(server.port, "sk-ant-test").messages.create({ model: MODEL, max_tokens: 2, messages: PROMPT });
    checkEq(ok.usage.output_tokens, 2, "right x-api-key: served");
  } finally {
    checkEq(await stopServer(server), 0, "api-key server exit status after SIGTERM");
  }
}

async function main() {
  const bin = process.argv[2];
  if (!bin) {
    console.error("usage: node anthropic_sdk.js <llmload-server binary>");
    process.exit(2);
  }
  const server = await startServer(bin, ["--latency-model", "fixed", "--ttft", "5ms", "--itl", "1ms", "--port", "0"]);
  try {
    const c = client(server.port);
    let body = null;
    for (const [name, fn] of [["create", async () => (body = await testCreate(c))],
                              ["stream", async () => body && testStream(c, body)],
                              ["errors", async () => testErrors(server.port)],
                              ["tool use", async () => testToolUse(c)]]) {
      try {
        await fn();
      } catch (e) {
        failures.push(`${name}: unexpected ${e && e.constructor && e.constructor.name}: ${e && e.stack}`);
      }
    }
  } finally {
    checkEq(await stopServer(server), 0, "server exit status after SIGTERM");
  }
  try {
    await testAuth(bin);
  } catch (e) {
    failures.push(`api key: unexpected ${e && e.stack}`);
  }
  if (failures.length > 0) {
    console.error(`FAIL: ${failures.length} of ${checkCount()} checks failed (@anthropic-ai/sdk ${SDK_VERSION}):`);
    for (const f of failures) console.error(`  - ${f}`);
    process.exit(1);
  }
  console.log(`PASS: ${checkCount()} checks with the @anthropic-ai/sdk npm package ${SDK_VERSION}`);
}

// A promise nobody settles (e.g. a server that died unnoticed) would let node exit 0 with the
// checks unfinished: that is a failure too.
let finished = false;
process.on("beforeExit", () => {
  if (!finished) {
    console.error(`FAIL: the checks did not finish (${checkCount()} done, ${failures.length} failed so far)`);
    for (const f of failures) console.error(`  - ${f}`);
    process.exit(1);
  }
});

main().then(() => (finished = true)).catch((e) => {
  finished = true;
  console.error(`FAIL: ${e && e.stack}`);
  process.exit(1);
});
