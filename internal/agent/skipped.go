package agent

import (
	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/manifest"
)

// skippedResults reports the bundle's objects of cluster kinds berth does
// not apply (manifest.Skipped), in the order read, each with the reason
// from manifest's table: nothing of them is stored or acted on.
func skippedResults(b *manifest.Bundle) []agentapi.ApplyResult {
	results := make([]agentapi.ApplyResult, 0, len(b.Skipped))
	for _, s := range b.Skipped {
		results = append(results, agentapi.ApplyResult{
			APIVersion: s.APIVersion, Kind: s.Kind, Namespace: s.Namespace, Name: s.Name,
			Outcome: agentapi.OutcomeSkipped, Message: s.Reason(),
		})
	}
	return results
}
