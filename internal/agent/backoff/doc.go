// Package backoff is the agent's crash back-off (CrashLoopBackOff), as the kubelet runs
// it with client-go's flowcontrol.Backoff: 10 s doubling to 300 s, reset after 10
// minutes, all three configurable. It is pure: callers pass the times.
//
// What is implemented, exactly, for one key (pod uid + container name + spec hash, see
// Key):
//
//   - The first exit is not held back: without an entry Until returns the zero time.
//   - Next(key, finishedAt, now) is called when a container that exited at finishedAt is
//     restarted at now. It sets the delay to Initial when the key has no entry or when
//     finishedAt - (the now of the previous Next) >= ResetAfter, i.e. the run that just
//     ended lasted ResetAfter or more; otherwise it doubles the delay, capped at Max.
//     It records now as the start of the new run. Successive delays are therefore
//     10, 20, 40, 80, 160, 300, 300, ... seconds.
//   - Until(key, finishedAt, now) holds the restart back until finishedAt + delay,
//     unless the run that ended at finishedAt lasted ResetAfter or more (then no wait).
//
// The kubelet keys entries by pod name, namespace, uid, container name and a hash of
// the container spec, measures eventTime = FinishedAt of the newest exited instance,
// and resets when eventTime - lastUpdate > 600 s (lastUpdate = time of the last Next).
// The reset is thus about how long the container ran, not about how long ago it last
// crashed: a container that crashes quickly, stays down an hour (say its pod was
// stopped) and crashes quickly again keeps doubling. Berth does the same, with >= in
// place of > (they differ by a nanosecond). client-go's own default (reset after
// 2 * Max since the last update) is not what the kubelet uses and not what this package
// does. Jitter is not applied (the kubelet uses none for crashes).
//
// Config.CrashLoop caps the crash back-off at kubelet's crashLoopBackOff.
// maxContainerRestartPeriod (KEP-4603; 1 s to 300 s, ValidateMaxContainerRestartPeriod): the
// cap is the smaller of Max and that period, and a first delay above the cap is the cap, as
// kubelet's newCrashLoopBackOff sets them.
//
// Image pull back-off records failures at the time they happen
// (Next(key, failedAt, failedAt)) and asks UntilRecorded.
//
// GC drops entries of containers that are gone (the keep function) and entries whose
// last restart is ResetAfter + Max or more ago.
package backoff
