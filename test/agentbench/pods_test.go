package agentbench

import (
	"fmt"
	"strings"
)

// fourContainerPod is one pod of four long-running containers; with probe,
// each has an exec readiness probe.
func fourContainerPod(name string, probe bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n", name)
	for i := 0; i < 4; i++ {
		fmt.Fprintf(&b, "  - name: c%d\n    image: docker.io/library/busybox:latest\n    imagePullPolicy: IfNotPresent\n    command: [\"sleep\", \"3600\"]\n", i)
		if probe {
			b.WriteString("    readinessProbe:\n      exec:\n        command: [\"true\"]\n      periodSeconds: 1\n")
		}
	}
	return b.String()
}

// manyPods is n single-container pods in one multi-document file.
func manyPods(prefix string, n int) string {
	docs := make([]string, n)
	for i := range docs {
		docs[i] = fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s-%d\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n"+
			"  - name: app\n    image: docker.io/library/busybox:latest\n    imagePullPolicy: IfNotPresent\n    command: [\"sleep\", \"3600\"]\n", prefix, i)
	}
	return strings.Join(docs, "---\n")
}
