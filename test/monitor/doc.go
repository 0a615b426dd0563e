// Package monitor holds the tests that drive the per-pod monitor binary (native/berth-monitor,
// C, built by `make monitor-bin`) through internal/monitor's client, with the
// host's runc and busybox bundles: logs, exits, OOM kills, terminals, stdin,
// attach, adoption, rollback, bad requests. Root only (each test skips
// otherwise). With BERTH_TEST_MONITOR_SANITIZE=1 the suite runs on the
// monitor's AddressSanitizer and UBSan build, and any report fails it.
package monitor
