#!/usr/bin/env node
// Conformance of llmload-server with a real third-party client: the official `openai` npm
// package (version pinned in package.json, installed with `npm ci --prefix tests/conformance`).
//   node openai_sdk.js <path to llmload-server>
// Starts the server (fixed latency model, --port 0), reads the port from its one stdout line,
// drives it through the SDK (streaming and non-streaming chat and completions, models.list,
// errors; the Responses API: responses.create streamed and not, responses.stream, reasoning,
// previous_response_id, incomplete responses, function calls and text.format; chat's
// reasoning_effort, tool calls through chat.completions.stream() and parse(), response_format) and checks what the SDK hands back. A second server with --api-key checks the SDK's
// AuthenticationError, and that the right key passes.
// Exit status 0 only if every check passed; each failure names what differed.
"use strict";
const path = require("path");

const INSTALL_HINT = "run `npm ci --prefix tests/conformance` (scripts/setup.sh does it)";
let OpenAI;
let SDK_VERSION;
try {
  OpenAI = require(path.join(__dirname, "node_modules", "openai"));
  SDK_VERSION = require(path.join(__dirname, "node_modules", "openai", "package.json")).version;
} catch (e) {
  console.error(`FAIL: the openai npm package is not installed in tests/conformance: ${INSTALL_HINT}`);
  process.exit(2);
}

const { MODEL, check, checkEq, words, startServer, stopServer, failures, checkCount } = require("./harness");

function client(port, apiKey = "unused-no-auth") {
  return new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey, maxRetries: 0, timeout: 15000 });
}

/// The server's ground truth ("llmload", docs/server.md) on a final chunk / body: the SDK hands
/// unknown fields through, so a client can read it.
function checkLlmload(obj, what) {
  check(obj.llmload !== undefined && obj.llmload !== null, `${what}: carries the "llmload" object`);
  if (!obj.llmload) return;
  for (const key of ["arrival_unix_ns", "queue_s", "first_token_s", "last_token_s", "preemptions", "cached_tokens"]) {
    check(typeof obj.llmload[key] === "number", `${what}: llmload.${key} is a number`);
  }
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

async function testModels(c) {
  const ids = [];
  for await (const m of c.models.list()) {
    ids.push(m.id);
    checkEq(m.object, "model", "models.list object");
    check(typeof m.max_model_len === "number" && m.max_model_len > 0, "models.list max_model_len is a positive number");
    check(typeof m.created === "number", "models.list created is a number");
  }
  checkEq(ids, [MODEL], "models.list ids");
}

async function testChatStream(c) {
  const prompt = "Say something about load generators please";
  const stream = await c.chat.completions.create({
    model: MODEL,
    messages: [{ role: "system", content: "be brief" }, { role: "user", content: prompt }],
    max_tokens: 5,
    stream: true,
    stream_options: { include_usage: true },
  });
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  check(chunks.length === 1 + 5 + 1, `chat stream: role chunk + 5 content chunks + usage chunk, got ${chunks.length}`);
  const id = chunks[0] && chunks[0].id;
  check(typeof id === "string" && id.startsWith("chatcmpl-"), `chat stream id prefix: ${id}`);
  let text = "";
  let contentChunks = 0;
  let finish = null;
  let usage = null;
  chunks.forEach((ch, i) => {
    checkEq(ch.id, id, `chat chunk ${i} id`);
    checkEq(ch.object, "chat.completion.chunk", `chat chunk ${i} object`);
    checkEq(ch.model, MODEL, `chat chunk ${i} model`);
    if (ch.usage) usage = ch.usage;
    if (ch.choices.length === 0) return;
    const choice = ch.choices[0];
    if (i === 0) checkEq(choice.delta.role, "assistant", "chat first chunk role");
    if (choice.delta.content) {
      contentChunks += 1;
      text += choice.delta.content;
    }
    if (choice.finish_reason) {
      finish = choice.finish_reason;
      checkLlmload(ch, "chat last chunk");
    }
  });
  checkEq(contentChunks, 5, "chat stream content chunks");
  checkEq(words(text), 5, "chat stream words");
  checkEq(finish, "length", "chat stream finish_reason");
  const last = chunks[chunks.length - 1];
  checkEq(last.choices, [], "chat usage chunk choices");
  check(usage !== null, "chat stream has a usage chunk");
  if (usage) {
    checkEq(usage.prompt_tokens, words("be brief") + words(prompt), "chat usage prompt_tokens");
    checkEq(usage.completion_tokens, 5, "chat usage completion_tokens");
    checkEq(usage.total_tokens, usage.prompt_tokens + 5, "chat usage total_tokens");
  }
}

async function testChatContinuousUsage(c) {
  const stream = await c.chat.completions.create({
    model: MODEL,
    messages: [{ role: "user", content: "one two three" }],
    max_tokens: 3,
    stream: true,
    stream_options: { include_usage: true, continuous_usage_stats: true },
  });
  const seen = [];
  for await (const chunk of stream) seen.push(chunk.usage ? chunk.usage.completion_tokens : null);
  checkEq(seen, [0, 1, 2, 3, 3], "continuous_usage_stats: completion_tokens per chunk");
}

async function testCompletionStream(c) {
  const stream = await c.completions.create({ model: MODEL, prompt: "a b c d", max_tokens: 4, stream: true });
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  checkEq(chunks.length, 4, "completions stream chunks (one per token, no usage chunk)");
  const id = chunks[0] && chunks[0].id;
  check(typeof id === "string" && id.startsWith("cmpl-"), `completions stream id prefix: ${id}`);
  let text = "";
  chunks.forEach((ch, i) => {
    checkEq(ch.id, id, `completions chunk ${i} id`);
    checkEq(ch.object, "text_completion", `completions chunk ${i} object`);
    check(ch.usage === undefined || ch.usage === null, `completions chunk ${i} has no usage`);
    text += ch.choices[0].text;
    checkEq(ch.choices[0].finish_reason, i === 3 ? "length" : null, `completions chunk ${i} finish_reason`);
  });
  checkLlmload(chunks[chunks.length - 1], "completions last chunk");
  checkEq(words(text), 4, "completions stream words");
}

async function testNonStreaming(c) {
  const chat = await c.chat.completions.create({
    model: MODEL,
    messages: [{ role: "user", content: [{ type: "text", text: "hello there" }] }],
    max_completion_tokens: 6,
  });
  check(chat.id.startsWith("chatcmpl-"), `chat id prefix: ${chat.id}`);
  checkEq(chat.object, "chat.completion", "chat object");
  checkEq(chat.model, MODEL, "chat model");
  checkEq(chat.choices.length, 1, "chat choices");
  checkEq(chat.choices[0].message.role, "assistant", "chat message role");
  checkEq(words(chat.choices[0].message.content), 6, "chat content words");
  checkEq(chat.choices[0].finish_reason, "length", "chat finish_reason");
  checkEq([chat.usage.prompt_tokens, chat.usage.completion_tokens, chat.usage.total_tokens], [2, 6, 8], "chat usage");
  checkLlmload(chat, "chat body");

  const cmpl = await c.completions.create({ model: MODEL, prompt: "one two three", max_tokens: 3 });
  check(cmpl.id.startsWith("cmpl-"), `completion id prefix: ${cmpl.id}`);
  checkEq(cmpl.object, "text_completion", "completion object");
  // Three generated words, each with its leading space (the words depend on the prompt: docs/server.md).
  check(/^( [A-Za-z]+){3}$/.test(cmpl.choices[0].text), `completion text is 3 words: ${JSON.stringify(cmpl.choices[0].text)}`);
  checkEq(cmpl.choices[0].finish_reason, "length", "completion finish_reason");
  checkEq([cmpl.usage.prompt_tokens, cmpl.usage.completion_tokens, cmpl.usage.total_tokens], [3, 3, 6],
          "completion usage");
  checkLlmload(cmpl, "completion body");
  check(cmpl.id !== chat.id, "response ids differ between requests");
}

/// The number of words of reasoning a request gets for an effort on a server without
/// --reasoning-tokens (docs/server-apis.md): low = 16.
const LOW_EFFORT_TOKENS = 16;

async function testChatReasoning(c) {
  const body = await c.chat.completions.create({
    model: MODEL, messages: [{ role: "user", content: "think about it" }], max_tokens: LOW_EFFORT_TOKENS + 3,
    reasoning_effort: "low",
  });
  const message = body.choices[0].message;
  checkEq(words(message.reasoning_content || ""), LOW_EFFORT_TOKENS, "chat reasoning_content words");
  checkEq(words(message.content || ""), 3, "chat content words after reasoning");
  checkEq(body.usage.completion_tokens, LOW_EFFORT_TOKENS + 3, "chat completion_tokens include reasoning");
  checkEq(body.usage.completion_tokens_details && body.usage.completion_tokens_details.reasoning_tokens,
          LOW_EFFORT_TOKENS, "chat usage.completion_tokens_details.reasoning_tokens");
  check(body.llmload.first_output_token_s > body.llmload.first_token_s, "chat llmload.first_output_token_s after first_token_s");

  const stream = await c.chat.completions.create({
    model: MODEL, messages: [{ role: "user", content: "think about it" }], max_tokens: LOW_EFFORT_TOKENS + 3,
    reasoning_effort: "low", stream: true, stream_options: { include_usage: true },
  });
  let reasoning = "";
  let content = "";
  let usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    if (chunk.choices.length === 0) continue;
    const d = chunk.choices[0].delta;
    if (d.reasoning_content) reasoning += d.reasoning_content;
    if (d.content) content += d.content;
  }
  checkEq(reasoning, message.reasoning_content, "chat stream reasoning = the body's");
  checkEq(content, message.content, "chat stream content = the body's");
  checkEq(usage && usage.completion_tokens_details && usage.completion_tokens_details.reasoning_tokens,
          LOW_EFFORT_TOKENS, "chat stream usage reasoning_tokens");
}

async function testResponses(c) {
  const plain = await c.responses.create({ model: MODEL, input: "hello there", max_output_tokens: 4 });
  check(plain.id.startsWith("resp_"), `responses id prefix: ${plain.id}`);
  checkEq(plain.object, "response", "responses object");
  checkEq(plain.status, "incomplete", "responses status (max_output_tokens cut the answer)");
  checkEq(plain.incomplete_details && plain.incomplete_details.reason, "max_output_tokens", "responses incomplete_details");
  checkEq(words(plain.output_text), 4, "responses output_text words (the SDK's helper)");
  checkEq([plain.usage.input_tokens, plain.usage.output_tokens, plain.usage.total_tokens], [2, 4, 6], "responses usage");
  checkEq(plain.usage.output_tokens_details.reasoning_tokens, 0, "responses reasoning_tokens without reasoning");
  checkLlmload(plain, "responses body");

  const reasoned = await c.responses.create({
    model: MODEL, input: [{ role: "user", content: "think about it" }], instructions: "be brief",
    max_output_tokens: LOW_EFFORT_TOKENS + 3, reasoning: { effort: "low" },
  });
  checkEq(reasoned.output.map((o) => o.type), ["reasoning", "message"], "responses output items with reasoning");
  checkEq(words(reasoned.output[0].content[0].text), LOW_EFFORT_TOKENS, "responses reasoning_text words");
  checkEq(words(reasoned.output_text), 3, "responses output_text after reasoning");
  checkEq(reasoned.usage.output_tokens_details.reasoning_tokens, LOW_EFFORT_TOKENS, "responses usage reasoning_tokens");
  checkEq(reasoned.usage.output_tokens, LOW_EFFORT_TOKENS + 3, "responses output_tokens include reasoning");
  checkEq(reasoned.instructions, "be brief", "responses instructions echoed");

  // A follow-up: the earlier turn is part of the prompt.
  const next = await c.responses.create({ model: MODEL, input: "and then", previous_response_id: plain.id,
                                          max_output_tokens: 2 });
  checkEq(next.usage.input_tokens, 2 + 4 + 2, "previous_response_id: input_tokens count the earlier turn");
  checkEq(next.previous_response_id, plain.id, "previous_response_id echoed");
  const unknown = await expectApiError(
      c.responses.create({ model: MODEL, input: "x", previous_response_id: "resp_unknown" }), OpenAI.BadRequestError, 400,
      "unknown previous_response_id");
  if (unknown) checkEq(unknown.param, "previous_response_id", "unknown previous_response_id: param");
}

async function testResponsesStream(c) {
  const params = { model: MODEL, input: "think about it", max_output_tokens: LOW_EFFORT_TOKENS + 3,
                   reasoning: { effort: "low" } };
  // The SDK's helper: it accumulates the events into the final response.
  const stream = c.responses.stream(params);
  const types = [];
  let reasoning = "";
  let text = "";
  let incomplete = null;
  for await (const event of stream) {
    types.push(event.type);
    if (event.type === "response.reasoning_text.delta") reasoning += event.delta;
    if (event.type === "response.output_text.delta") text += event.delta;
    if (event.type === "response.incomplete") incomplete = event.response;
  }
  // max_output_tokens cuts the answer: OpenAI's response.incomplete. This SDK version's
  // finalResponse() keeps its accumulated snapshot then (it takes the final response only from
  // response.completed), so the usage and ground truth are read from the event.
  const final = await stream.finalResponse();
  checkEq(types.slice(0, 4), ["response.created", "response.in_progress", "response.output_item.added",
                              "response.content_part.added"], "responses stream: first events");
  checkEq(types.slice(-4), ["response.output_text.done", "response.content_part.done", "response.output_item.done",
                            "response.incomplete"], "responses stream: last events");
  checkEq(types.filter((t) => t === "response.reasoning_text.delta").length, LOW_EFFORT_TOKENS, "reasoning deltas");
  checkEq(types.filter((t) => t === "response.output_text.delta").length, 3, "output_text deltas");
  // (finalResponse() has no output_text helper in this SDK version: the message item's text.)
  checkEq(final.output[1] && final.output[1].content[0].text, text, "responses.stream final message text = the deltas");
  checkEq(final.output[0].content[0].text, reasoning, "responses.stream reasoning text = the deltas");
  check(incomplete !== null, "responses.stream: a response.incomplete event");
  if (incomplete) {
    checkEq(incomplete.status, "incomplete", "response.incomplete: status");
    checkEq(incomplete.incomplete_details, { reason: "max_output_tokens" }, "response.incomplete: incomplete_details");
    checkEq(incomplete.usage.output_tokens_details.reasoning_tokens, LOW_EFFORT_TOKENS, "response.incomplete usage reasoning_tokens");
    checkLlmload(incomplete, "response.incomplete's response");
  }

  // create({stream: true}): the raw events, sequence numbers in order.
  const raw = await c.responses.create({ model: MODEL, input: "hello there", max_output_tokens: 3, stream: true });
  const seq = [];
  let completed = null;
  for await (const event of raw) {
    seq.push(event.sequence_number);
    if (event.type === "response.completed" || event.type === "response.incomplete") completed = event.response;
  }
  checkEq(seq, [...Array(seq.length).keys()], "responses stream sequence_number 0, 1, 2, ...");
  check(completed !== null, "responses stream ends with response.incomplete (max_output_tokens cut it)");
  if (completed) checkEq(completed.status, "incomplete", "responses stream final status");
  if (completed) checkEq(completed.usage.output_tokens, 3, "responses stream usage.output_tokens");
}

const WEATHER = {
  type: "object",
  properties: { city: { type: "string" }, unit: { type: "string", enum: ["c", "f"] },
                days: { type: "integer", minimum: 1, maximum: 7 } },
  required: ["city", "days"],
  additionalProperties: false,
};
const CHAT_TOOLS = [{ type: "function", function: { name: "get_weather", description: "weather", parameters: WEATHER,
                                                     strict: true } }];

/// The arguments an SDK handed back: JSON, with the schema's required properties and types.
function checkWeatherArgs(text, what) {
  let args = null;
  try {
    args = JSON.parse(text);
  } catch (e) {
    check(false, `${what}: arguments are not JSON: ${text}`);
    return null;
  }
  check(typeof args.city === "string", `${what}: city is a string: ${text}`);
  check(Number.isInteger(args.days) && args.days >= 1 && args.days <= 7, `${what}: days in [1, 7]: ${text}`);
  check(args.unit === undefined || ["c", "f"].includes(args.unit), `${what}: unit in the enum: ${text}`);
  check(Object.keys(args).every((k) => k in WEATHER.properties), `${what}: no other properties: ${text}`);
  return args;
}

async function testChatToolCalls(c) {
  const messages = [{ role: "user", content: "What is the weather in Paris?" }];
  const body = await c.chat.completions.create({ model: MODEL, messages, tools: CHAT_TOOLS, tool_choice: "required" });
  const choice = body.choices[0];
  checkEq(choice.finish_reason, "tool_calls", "chat tool call finish_reason");
  checkEq(choice.message.content, null, "chat tool call content");
  const call = choice.message.tool_calls && choice.message.tool_calls[0];
  check(call && call.id.startsWith("call_") && call.type === "function", `chat tool call id and type: ${JSON.stringify(call)}`);
  if (!call) return;
  checkEq(call.function.name, "get_weather", "chat tool call name");
  checkWeatherArgs(call.function.arguments, "chat tool call");
  checkEq(body.usage.completion_tokens, words(call.function.arguments), "chat tool call: completion_tokens = argument tokens");

  // The SDK's stream helper accumulates the deltas; strict tools are parsed for us.
  const stream = c.chat.completions.stream({ model: MODEL, messages, tools: CHAT_TOOLS });
  let deltas = 0;
  stream.on("tool_calls.function.arguments.delta", (e) => (deltas += e.arguments_delta ? 1 : 0));
  const final = await stream.finalChatCompletion();
  const streamed = final.choices[0].message.tool_calls[0];
  checkEq(streamed.function.arguments, call.function.arguments, "chat stream: arguments = the body's (deterministic)");
  checkEq(streamed.function.parsed_arguments, JSON.parse(call.function.arguments), "chat stream: parsed_arguments");
  checkEq(deltas, words(call.function.arguments), "chat stream: one arguments delta per token");
  checkEq(final.choices[0].finish_reason, "tool_calls", "chat stream finish_reason");

  // The next turn of an agent: the call and its result sent back.
  const next = await c.chat.completions.create({
    model: MODEL, max_tokens: 3, tools: CHAT_TOOLS, tool_choice: "none",
    messages: [...messages, choice.message, { role: "tool", tool_call_id: call.id, content: "sunny and warm" }],
  });
  checkEq(next.usage.prompt_tokens, words(messages[0].content) + words(call.function.arguments) + 3,
          "agent turn: the call and the tool's result are prompt tokens");
  checkEq(words(next.choices[0].message.content), 3, "tool_choice none: plain text");

  const cut = await c.chat.completions.create({ model: MODEL, messages, tools: CHAT_TOOLS, max_tokens: 1 });
  checkEq(cut.choices[0].finish_reason, "length", "chat tool call cut by max_tokens");
  await expectApiError(c.chat.completions.create({ model: MODEL, messages, tools: CHAT_TOOLS,
                                                   tool_choice: { type: "function", function: { name: "nope" } } }),
                       OpenAI.BadRequestError, 400, "tool_choice naming an unknown tool");
}

async function testChatStructuredOutput(c) {
  const schema = { type: "object", properties: { answer: { type: "integer" }, reason: { type: "string" } },
                   required: ["answer", "reason"], additionalProperties: false };
  const params = { model: MODEL, messages: [{ role: "user", content: "Why?" }],
                   response_format: { type: "json_schema", json_schema: { name: "why", schema, strict: true } } };
  const parsed = await c.chat.completions.parse(params);
  const value = parsed.choices[0].message.parsed;
  check(value && Number.isInteger(value.answer) && typeof value.reason === "string",
        `json_schema response_format: parsed ${JSON.stringify(value)}`);
  const streamed = await c.chat.completions.stream(params).finalChatCompletion();
  // (The stream helper parses only zod-made formats: the content is the same JSON.)
  checkEq(JSON.parse(streamed.choices[0].message.content), value, "json_schema response_format streamed: the same answer");
  const object = await c.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "Why?" }],
                                                   response_format: { type: "json_object" } });
  check(typeof JSON.parse(object.choices[0].message.content) === "object", "json_object response_format is a JSON object");
  await expectApiError(c.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "x" }],
                                                   response_format: { type: "json_schema", json_schema: { name: "x" } } }),
                       OpenAI.BadRequestError, 400, "json_schema without schema");
}

async function testResponsesToolCalls(c) {
  const tools = [{ type: "function", name: "get_weather", description: "weather", parameters: WEATHER, strict: true }];
  const body = await c.responses.create({ model: MODEL, input: "What is the weather in Paris?", tools });
  checkEq(body.status, "completed", "responses function call status");
  const item = body.output[0];
  checkEq(item && item.type, "function_call", "responses output item type");
  if (!item) return;
  check(item.id.startsWith("fc_") && item.call_id.startsWith("call_"), `function_call ids: ${item.id} ${item.call_id}`);
  checkWeatherArgs(item.arguments, "responses function_call");

  const stream = c.responses.stream({ model: MODEL, input: "What is the weather in Paris?", tools });
  const types = [];
  let args = "";
  for await (const event of stream) {
    types.push(event.type);
    if (event.type === "response.function_call_arguments.delta") args += event.delta;
  }
  const final = await stream.finalResponse();
  checkEq(types.slice(0, 3), ["response.created", "response.in_progress", "response.output_item.added"],
          "responses function call stream: first events");
  checkEq(types.slice(-3), ["response.function_call_arguments.done", "response.output_item.done", "response.completed"],
          "responses function call stream: last events");
  checkEq(args, item.arguments, "responses stream: the deltas are the arguments");
  checkEq(final.output[0].arguments, item.arguments, "responses.stream finalResponse: arguments");
  checkEq(final.output[0].status, "completed", "responses.stream finalResponse: item status");

  // An agent turn: the call and its output sent back as input items.
  const next = await c.responses.create({
    model: MODEL, max_output_tokens: 200, tools, tool_choice: "none",
    input: [{ role: "user", content: "What is 6 * 7?" }, { type: "function_call", call_id: item.call_id, name: item.name,
             arguments: item.arguments }, { type: "function_call_output", call_id: item.call_id, output: "sunny" }],
  });
  checkEq(next.output[0].type, "message", "responses agent turn, tool_choice none: a message");
  checkEq(next.status, "completed", "responses agent turn ends at EOS");

  const structured = await c.responses.create({ model: MODEL, input: "Why?",
    text: { format: { type: "json_schema", name: "w", schema: WEATHER, strict: true } } });
  checkWeatherArgs(structured.output_text, "responses text.format json_schema");
  await expectApiError(c.responses.create({ model: MODEL, input: "x", tools: [{ type: "web_search" }] }),
                       OpenAI.BadRequestError, 400, "responses non-function tool");
}

async function testErrors(c) {
  const empty = await expectApiError(c.chat.completions.create({ model: MODEL, messages: [], max_tokens: 1 }),
                                     OpenAI.BadRequestError, 400, "empty messages");
  if (empty) {
    checkEq(empty.type, "BadRequestError", "empty messages: error type");
    checkEq(empty.param, "messages", "empty messages: error param");
  }
  const long = await expectApiError(
      c.completions.create({ model: MODEL, prompt: "a b c", max_tokens: 1000000 }), OpenAI.BadRequestError, 400,
      "max_tokens over the context");
  if (long) check(/maximum context length is \d+ tokens/.test(long.message), `context message: ${long.message}`);
  await expectApiError(c.completions.create({ model: MODEL, prompt: "a", n: 2 }),
                       OpenAI.BadRequestError, 400, "n = 2");
  const missing = await expectApiError(c.completions.create({ model: "no-such-model", prompt: "a" }),
                                       OpenAI.NotFoundError, 404, "unknown model");
  if (missing) check(/does not exist/.test(missing.message), `unknown model message: ${missing.message}`);
}

async function testAuth(bin) {
  let server;
  try {
    server = await startServer(bin, ["--latency-model", "fixed", "--ttft", "5ms", "--itl", "1ms", "--port", "0",
                                     "--api-key", "secret"]);
  } catch (e) {
    check(false, `llmload-server did not start with --api-key: ${e.message}`);
    return;
  }
  try {
    const wrong = await expectApiError(client(server.port, "wrong-key").models.list(), OpenAI.AuthenticationError, 401,
                                       "wrong API key");
    if (wrong) {
      checkEq(wrong.type, "AuthenticationError", "wrong API key: error type");
      check(!/wrong-key|secret/.test(wrong.message), `the 401 message never echoes a key: ${wrong.message}`);
    }
    await expectApiError(client(server.port, "wrong-key").chat.completions.create({
      model: MODEL, messages: [{ role: "user", content: "a" }], max_tokens: 1, stream: true }),
                         OpenAI.AuthenticationError, 401, "wrong API key, streaming");
    const ok = await client(server.port, "secret").completions.create({ model: MODEL, prompt: "a", max_tokens: 2 });
    checkEq(ok.usage.completion_tokens, 2, "right API key: completion");
    const health = await fetch(`http://127.0.0.1:${server.port}/health`);
    checkEq(health.status, 200, "/health stays open with --api-key");
  } finally {
    checkEq(await stopServer(server), 0, "api-key server exit status after SIGTERM");
  }
}

async function main() {
  const bin = process.argv[2];
  if (!bin) {
    console.error("usage: node openai_sdk.js <llmload-server binary>");
    process.exit(2);
  }
  const server = await startServer(bin, ["--latency-model", "fixed", "--ttft", "5ms", "--itl", "1ms", "--port", "0"]);
  try {
    const c = client(server.port);
    for (const [name, fn] of [["models", testModels], ["chat stream", testChatStream],
                              ["continuous usage", testChatContinuousUsage], ["completions stream", testCompletionStream],
                              ["non-streaming", testNonStreaming], ["errors", testErrors],
                              ["chat reasoning", testChatReasoning], ["responses", testResponses],
                              ["responses stream", testResponsesStream], ["chat tool calls", testChatToolCalls],
                              ["chat structured output", testChatStructuredOutput],
                              ["responses tool calls", testResponsesToolCalls]]) {
      try {
        await fn(c);
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
    console.error(`FAIL: ${failures.length} of ${checkCount()} checks failed (openai ${SDK_VERSION}):`);
    for (const f of failures) console.error(`  - ${f}`);
    process.exit(1);
  }
  console.log(`PASS: ${checkCount()} checks with the openai npm package ${SDK_VERSION}`);
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
