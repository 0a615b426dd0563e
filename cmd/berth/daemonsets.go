package main

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/berth-dev/berth/internal/agent/agentapi"
)

// daemonSetHeader is kubectl get ds's columns.
const daemonSetHeader = "NAME\tDESIRED\tCURRENT\tREADY\tUP-TO-DATE\tAVAILABLE\tNODE SELECTOR\tAGE"

// daemonSetCells is a DaemonSet's row between NAME and AGE.
func daemonSetCells(ds *appsv1.DaemonSet) string {
	s := ds.Status
	return fmt.Sprintf("%d\t%d\t%d\t%d\t%d\t%s", s.DesiredNumberScheduled, s.CurrentNumberScheduled, s.NumberReady,
		s.UpdatedNumberScheduled, s.NumberAvailable, nodeSelectorColumn(ds.Spec.Template.Spec.NodeSelector))
}

// nodeSelectorColumn is kubectl's NODE SELECTOR: key=value,... or <none>.
func nodeSelectorColumn(selector map[string]string) string {
	if len(selector) == 0 {
		return "<none>"
	}
	return labels.SelectorFromSet(selector).String()
}

// describeDaemonSet is kubectl describe ds's view.
func describeDaemonSet(d describer, detail agentapi.WorkloadDetail) {
	ds := detail.DaemonSet
	s := ds.Status
	describeMeta(d, &ds.ObjectMeta, ds.Spec.Selector)
	d.line(0, "Node-Selector", "%s", nodeSelectorColumn(ds.Spec.Template.Spec.NodeSelector))
	d.line(0, "Desired Number of Nodes Scheduled", "%d", s.DesiredNumberScheduled)
	d.line(0, "Current Number of Nodes Scheduled", "%d", s.CurrentNumberScheduled)
	d.line(0, "Number of Nodes Scheduled with Up-to-date Pods", "%d", s.UpdatedNumberScheduled)
	d.line(0, "Number of Nodes Scheduled with Available Pods", "%d", s.NumberAvailable)
	d.line(0, "Number of Nodes Misscheduled", "%d", s.NumberMisscheduled)
	d.line(0, "UpdateStrategy", "%s", ds.Spec.UpdateStrategy.Type)
	if ru := ds.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.MaxUnavailable != nil && ru.MaxSurge != nil {
		d.line(0, "RollingUpdateStrategy", "%s max unavailable, %s max surge", ru.MaxUnavailable.String(), ru.MaxSurge.String())
	}
	phases := map[v1.PodPhase]int{}
	for _, p := range detail.Pods {
		if p.DeletionTimestamp == nil {
			phases[p.Status.Phase]++
		}
	}
	d.line(0, "Pods Status", "%d Running / %d Waiting / %d Succeeded / %d Failed",
		phases[v1.PodRunning], phases[v1.PodPending], phases[v1.PodSucceeded], phases[v1.PodFailed])
	describeTemplate(d, &ds.Spec.Template)
}

// daemonSetRolloutMessage is kubectl rollout status's line for a
// DaemonSet, and whether its rollout is complete.
func daemonSetRolloutMessage(ds *appsv1.DaemonSet) (string, bool, error) {
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType {
		return "", true, fmt.Errorf("rollout status is only available for %s strategy type", appsv1.RollingUpdateDaemonSetStrategyType)
	}
	s := ds.Status
	switch {
	case ds.Generation > s.ObservedGeneration:
		return "Waiting for daemon set spec update to be observed...\n", false, nil
	case s.UpdatedNumberScheduled < s.DesiredNumberScheduled:
		return fmt.Sprintf("Waiting for daemon set %q rollout to finish: %d out of %d new pods have been updated...\n", ds.Name, s.UpdatedNumberScheduled, s.DesiredNumberScheduled), false, nil
	case s.NumberAvailable < s.DesiredNumberScheduled:
		return fmt.Sprintf("Waiting for daemon set %q rollout to finish: %d of %d updated pods are available...\n", ds.Name, s.NumberAvailable, s.DesiredNumberScheduled), false, nil
	}
	return fmt.Sprintf("daemon set %q successfully rolled out\n", ds.Name), true, nil
}
