// The LangGraph.js contender of bench/peers: N iterations of an instant
// model node (an AI message with one tool call) → an instant tool node (the
// tool message), checkpointed by SqliteSaver after every super-step with
// durability "sync" and SQLite synchronous=FULL (the floor's durability),
// then a final answer. Prints one JSON line, as bench/peers/keelstep does.
//
//	node bench.mjs N DIR
import { readFileSync, statSync, existsSync } from "node:fs";
import { join } from "node:path";
import { StateGraph, MessagesAnnotation, START, END } from "@langchain/langgraph";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { AIMessage, ToolMessage } from "@langchain/core/messages";

const n = Number(process.argv[2]);
const dir = process.argv[3];
if (!Number.isInteger(n) || n < 1 || !dir) {
  console.error("usage: node bench.mjs N DIR");
  process.exit(2);
}

function wchar() {
  try {
    const m = readFileSync("/proc/self/io", "utf8").match(/^wchar: (\d+)$/m);
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

let calls = 0;
// The scripted model: a tool call for the first n calls, then the answer.
function model(state) {
  calls++;
  if (calls <= n) {
    return { messages: [new AIMessage({ content: "", tool_calls: [{ id: `call_${calls}`, name: "echo", args: { text: "hello" } }] })] };
  }
  return { messages: [new AIMessage("done")] };
}

function tools(state) {
  const last = state.messages[state.messages.length - 1];
  return { messages: last.tool_calls.map((c) => new ToolMessage({ content: c.args.text, tool_call_id: c.id })) };
}

const path = join(dir, "langgraph.db");
const saver = SqliteSaver.fromConnString(path);
saver.db.pragma("journal_mode = WAL");
saver.db.pragma("synchronous = FULL");

const graph = new StateGraph(MessagesAnnotation)
  .addNode("model", model)
  .addNode("tools", tools)
  .addEdge(START, "model")
  .addConditionalEdges("model", (s) => (s.messages[s.messages.length - 1].tool_calls?.length ? "tools" : END), ["tools", END])
  .addEdge("tools", "model")
  .compile({ checkpointer: saver });

const w0 = wchar();
const start = process.hrtime.bigint();
const out = await graph.invoke(
  { messages: [{ role: "user", content: "loop" }] },
  { configurable: { thread_id: "bench" }, recursionLimit: 2 * n + 10, durability: "sync" },
);
const took = Number(process.hrtime.bigint() - start) / 1e6;
const written = wchar() - w0;
if (out.messages.length !== 2 * n + 2) {
  console.error(`want ${2 * n + 2} messages, have ${out.messages.length}`);
  process.exit(1);
}
saver.db.pragma("wal_checkpoint(TRUNCATE)");
let size = 0;
for (const p of [path, path + "-wal"]) if (existsSync(p)) size += statSync(p).size;
console.log(JSON.stringify({ steps: n, ms_per_step: took / (n + 1), store_bytes: size, write_bytes: written, note: "durability sync, synchronous=FULL" }));
