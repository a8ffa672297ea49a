// The shared harness of the SDK conformance scripts (openai_sdk.js, anthropic_sdk.js): checks
// that collect failures instead of throwing, and llmload-server started on --port 0 and stopped.
"use strict";
const { spawn } = require("child_process");

const MODEL = "llmload-mock";
const START_TIMEOUT_MS = 20000;
let checks = 0;
const failures = [];

function check(ok, what) {
  checks += 1;
  if (!ok) failures.push(what);
}
function checkEq(actual, expected, what) {
  const a = JSON.stringify(actual);
  const e = JSON.stringify(expected);
  check(a === e, `${what}: expected ${e}, got ${a}`);
}
const words = (text) => text.split(/[ \t\n\v\f\r]+/).filter((w) => w.length > 0).length;

/// Starts llmload-server with `args`; resolves to {child, port}, or rejects with its stderr.
function startServer(bin, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`no "listening" line within ${START_TIMEOUT_MS} ms; stderr: ${err}`));
    }, START_TIMEOUT_MS);
    child.stdout.on("data", (d) => {
      out += d;
      const m = /llmload-server listening on http:\/\/([^\s:]+|\[[^\]]+\]):(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ child, port: Number(m[2]), stderr: () => err });
      }
    });
    child.stderr.on("data", (d) => (err += d));
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      if (signal !== null && signal !== "SIGTERM" && signal !== "SIGKILL") {
        failures.push(`llmload-server ${args.join(" ")} died with ${signal}; stderr: ${err}`);
      }
      reject(Object.assign(new Error(`server exited (code ${code}, signal ${signal}) before listening: ${err}`),
                           { code, stderr: err }));
    });
    child.on("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}

/// SIGTERM, then the exit status (the server exits 0 on SIGTERM).
function stopServer(server) {
  return new Promise((resolve) => {
    const { exitCode, signalCode } = server.child;
    if (exitCode !== null || signalCode !== null) return resolve(exitCode !== null ? exitCode : signalCode);
    const timer = setTimeout(() => server.child.kill("SIGKILL"), 10000);
    server.child.once("exit", (code, signal) => {
      clearTimeout(timer);
      resolve(code !== null ? code : signal);
    });
    server.child.kill("SIGTERM");
  });
}

const checkCount = () => checks;

module.exports = { MODEL, check, checkEq, words, startServer, stopServer, failures, checkCount };
