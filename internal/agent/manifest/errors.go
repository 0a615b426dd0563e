package manifest

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Problem is one thing wrong with the manifests: where it is and what it is.
type Problem struct {
	// Source is the file the object came from, or "-" for stdin.
	Source string
	// Object names the object ("Pod default/web"), or the document
	// ("document 2 (line 14)") when the object could not be identified.
	Object string
	// Err is what is wrong; a *field.Error (whose Field is the path inside
	// the object) for validation problems.
	Err error
}

func (p Problem) Error() string {
	var b strings.Builder
	if p.Source != "" {
		b.WriteString(p.Source + ": ")
	}
	if p.Object != "" {
		b.WriteString(p.Object + ": ")
	}
	b.WriteString(p.Err.Error())
	return b.String()
}

func (p Problem) Unwrap() error { return p.Err }

// InvalidError is returned when manifests cannot be decoded, merged or
// validated. It holds every problem found, one per line in Error().
type InvalidError struct {
	Problems []Problem
}

func (e *InvalidError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap exposes the problems to errors.Is and errors.As.
func (e *InvalidError) Unwrap() []error {
	errs := make([]error, len(e.Problems))
	for i, p := range e.Problems {
		errs[i] = p
	}
	return errs
}

// Sources lists, sorted and once each, the sources that have problems.
func (e *InvalidError) Sources() []string {
	var sources []string
	for _, p := range e.Problems {
		if !slices.Contains(sources, p.Source) {
			sources = append(sources, p.Source)
		}
	}
	slices.Sort(sources)
	return sources
}

// invalid wraps problems into an *InvalidError, or returns nil when there are none.
func invalid(problems []Problem) error {
	if len(problems) == 0 {
		return nil
	}
	return &InvalidError{Problems: problems}
}

// problemsOf turns any error from this package into problems, attributing
// foreign errors to source.
func problemsOf(err error, source string) []Problem {
	if err == nil {
		return nil
	}
	if inv := (*InvalidError)(nil); errors.As(err, &inv) {
		return inv.Problems
	}
	return []Problem{{Source: source, Err: err}}
}

// fieldProblems attributes each field error to one object of one source.
func fieldProblems(source, object string, errs field.ErrorList) []Problem {
	problems := make([]Problem, 0, len(errs))
	for _, e := range errs {
		problems = append(problems, Problem{Source: source, Object: object, Err: e})
	}
	return problems
}

// objectName renders "Kind namespace/name" as used in problems, or "Kind
// name" for a cluster-scoped kind.
func objectName(kind string, meta *metav1.ObjectMeta) string {
	if clusterScoped(kind) {
		return strings.TrimSpace(kind + " " + meta.Name)
	}
	return fmt.Sprintf("%s %s/%s", kind, namespaceOrDefault(meta.Namespace), meta.Name)
}

func namespaceOrDefault(namespace string) string {
	if namespace == "" {
		return metav1.NamespaceDefault
	}
	return namespace
}
