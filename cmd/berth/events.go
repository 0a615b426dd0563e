package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/berth-dev/berth/internal/agent/agentapi"
)

// eventsOptions are the flags of `berth events`.
type eventsOptions struct {
	namespace     string
	allNamespaces bool
	watch         bool
	types         []string
	forPod        string
	noHeaders     bool
}

// eventsPollInterval is how often `berth events -w` asks the agent.
const eventsPollInterval = time.Second

func newEventsCommand(opts *globalOptions) *cobra.Command {
	var o eventsOptions
	cmd := &cobra.Command{
		Use:   "events [-n NS | -A] [-w]",
		Short: "List the events of the agent's pods, like kubectl events",
		Long: `List the events the agent recorded for its pods (the ones berth describe shows),
oldest first: LAST SEEN TYPE REASON OBJECT MESSAGE, a repeated event as "(xN over D)".
-w keeps printing events as they happen or repeat (the agent is asked every second). The
agent keeps the last 100 events of each pod; a deleted pod's events go with it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, t := range o.types {
				if t != agentapi.EventNormal && t != agentapi.EventWarning {
					return fmt.Errorf("--types %q: want Normal or Warning", t)
				}
			}
			client, err := connectAgent(cmd, opts)
			if err != nil {
				return err
			}
			return runEvents(cmd, client, o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.namespace, "namespace", "n", "default", "namespace")
	f.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "the events of every namespace")
	f.BoolVarP(&o.watch, "watch", "w", false, "after the list, print new events as they come")
	f.StringSliceVar(&o.types, "types", nil, "only events of these types (Normal, Warning; comma-separated)")
	f.StringVar(&o.forPod, "for", "", "only the events of this object: a pod NAME, or KIND/NAME (pod/NAME, deployment/NAME, node/NAME)")
	f.BoolVar(&o.noHeaders, "no-headers", false, "print no header line")
	_ = cmd.RegisterFlagCompletionFunc("for", completePodNames(opts, "", 1)) // the flag exists
	return cmd
}

func runEvents(cmd *cobra.Command, client *agentapi.Client, o eventsOptions) error {
	ns := o.namespace
	if o.allNamespaces {
		ns = ""
	}
	ctx := cmd.Context()
	w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 8, 3, ' ', 0)
	seen := eventsSeen{}
	for first := true; ; first = false {
		list, err := client.ListEvents(ctx, ns)
		if err != nil {
			return err
		}
		fresh := seen.fresh(filterEvents(list.Items, o))
		if first && len(fresh) == 0 && !o.watch {
			noEvents(cmd, ns)
			return nil
		}
		if first && !o.noHeaders && (len(fresh) > 0 || o.watch) {
			fmt.Fprintln(w, eventsHeader(o.allNamespaces))
		}
		writeEvents(w, fresh, o.allNamespaces, time.Now())
		if err := w.Flush(); err != nil || !o.watch {
			return err
		}
		if !sleepCtx(ctx, eventsPollInterval) {
			return nil
		}
	}
}

// noEvents says that nothing was found, in kubectl events' words.
func noEvents(cmd *cobra.Command, ns string) {
	if ns == "" {
		fmt.Fprintln(cmd.ErrOrStderr(), "No events found.")
		return
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "No events found in %s namespace.\n", ns)
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// filterEvents keeps the events of the types and the object o names.
func filterEvents(events []agentapi.PodEvent, o eventsOptions) []agentapi.PodEvent {
	var out []agentapi.PodEvent
	for _, e := range events {
		if (len(o.types) == 0 || slices.Contains(o.types, e.Type)) && eventFor(e, o.forPod) {
			out = append(out, e)
		}
	}
	return out
}

// eventFor reports whether an event concerns the object --for names:
// NAME (a pod) or KIND/NAME (pod/web-0, deployment/web, node/vm).
func eventFor(e agentapi.PodEvent, forObject string) bool {
	if forObject == "" {
		return true
	}
	kind, name, ok := strings.Cut(forObject, "/")
	if !ok {
		kind, name = "pod", forObject
	}
	return strings.EqualFold(eventKind(e), kind) && e.Pod == name
}

// eventsSeen remembers the last occurrence printed of each event.
type eventsSeen map[string]time.Time

// fresh keeps the events not printed yet, or seen again since.
func (s eventsSeen) fresh(events []agentapi.PodEvent) []agentapi.PodEvent {
	var out []agentapi.PodEvent
	for _, e := range events {
		key := strings.Join([]string{e.PodUID, e.Namespace, e.Pod, e.Type, e.Reason, e.Object, e.Message}, "\x00")
		if last, ok := s[key]; ok && !e.LastTime.After(last) {
			continue
		}
		s[key] = e.LastTime
		out = append(out, e)
	}
	return out
}

func eventsHeader(allNamespaces bool) string {
	h := "LAST SEEN\tTYPE\tREASON\tOBJECT\tMESSAGE"
	if allNamespaces {
		h = "NAMESPACE\t" + h
	}
	return h
}

// writeEvents prints kubectl events' rows.
func writeEvents(w io.Writer, events []agentapi.PodEvent, allNamespaces bool, now time.Time) {
	for _, e := range events {
		if allNamespaces {
			fmt.Fprint(w, e.Namespace+"\t")
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", lastSeen(e.Event, now), e.Type, e.Reason, eventObject(e), oneLine(e.Message))
	}
}

// eventObject is kubectl's OBJECT column: kind/name, the kind in lower
// case (pod/web-0, deployment/web, node/vm).
func eventObject(e agentapi.PodEvent) string {
	return eventKind(e) + "/" + e.Pod
}

// eventKind is the kind of an event's object in lower case.
func eventKind(e agentapi.PodEvent) string {
	if e.Kind == "" {
		return "pod"
	}
	return strings.ToLower(e.Kind)
}

// lastSeen is how long ago an event last happened, with its count and
// span when it repeated: "5s (x3 over 2m)".
func lastSeen(e agentapi.Event, now time.Time) string {
	s := duration.HumanDuration(now.Sub(e.LastTime))
	if e.Count > 1 {
		s += fmt.Sprintf(" (x%d over %s)", e.Count, duration.HumanDuration(now.Sub(e.FirstTime)))
	}
	return s
}

// oneLine keeps a message on its row.
func oneLine(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "\n", " ") }
