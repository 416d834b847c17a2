// The core's smoke inside a module Worker: runs the checks and posts the outcome back.
import { runSmoke } from '../smoke-core.mjs';

self.postMessage(await runSmoke());
