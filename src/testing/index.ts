/**
 * Test helpers, public so that users can test their own code against a pool with no
 * real sleeps: `FakeClock` and `RecordingMetrics`.
 */
export { FakeClock, type FakeClockOptions, type RunUntilSettledOptions } from './fake-clock.js';
export { RecordingMetrics, type RecordedMetric } from './recording-metrics.js';
