/**
 * Runs a benchmark worker in a fresh Node process and returns the JSON object it prints
 * on its last stdout line. A fresh process per measurement keeps one contender's JIT
 * state, heap and timers from leaking into the next one's numbers.
 */
import { execFile } from 'node:child_process';

/**
 * @param {string} script path of the worker module
 * @param {object} args passed to the worker as one JSON argument
 * @param {string[]} [nodeFlags] e.g. ['--expose-gc']
 * @param {string} [node] the Node binary (default: the one running this script)
 */
export function runChild(script, args, nodeFlags = [], node = process.execPath) {
  return new Promise((resolve, reject) => {
    execFile(node, [...nodeFlags, script, JSON.stringify(args)], { maxBuffer: 16 << 20, timeout: 180_000 }, (error, stdout, stderr) => {
      if (error) {
        reject(new Error(`${script} ${JSON.stringify(args)} failed: ${error.message}\n${stderr}`));
        return;
      }
      const lines = stdout.trim().split('\n');
      try {
        resolve(JSON.parse(lines[lines.length - 1]));
      } catch {
        reject(new Error(`${script} printed no JSON result:\n${stdout}\n${stderr}`));
      }
    });
  });
}
