// Package nodefit is what the node is to the pods that ask for one: its
// labels (kubelet's well-known ones and --node-labels, validated as
// kubelet validates them), its taints (--register-with-taints), and the
// admission of a pod against them (spec.nodeName, nodeSelector and the
// required node affinity, and the taints it must tolerate) and against
// the room left on the node (Room: --max-pods and the allocatable CPU,
// memory and ephemeral storage less what admitted pods request), as
// kubelet's admission and the scheduler's predicates decide on one node.
//
// It is pure: no runtime, no disk. The agent builds the node from its
// configuration (Node), admits every pod it is given (Admit), places the
// pods of its controllers as the scheduler's filters would, against the
// node with the taints of its pressure conditions (Schedule,
// ConditionTaints), and the DaemonSet controller asks whether its pod
// should run here (ShouldRun).
package nodefit
