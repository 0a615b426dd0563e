package pullrecords

import (
	"cmp"
	"maps"
	"slices"
	"time"
)

// recordVersion is the version of the intent and pulled records' format.
const recordVersion = 1

// matchWriteLimit bounds the secrets a record learns while deciding (a
// pod's secret that matched by hash only, or by coordinates with a new
// hash), as kubelet's writeRecordWhileMatchingLimit: namespaces that come
// and go do not grow a record without end.
const matchWriteLimit = 100

// Secret is an image pull secret as a record keeps it: where it is
// (namespace, name, uid: kubelet's secret coordinates) and a keyed hash
// of the credential of it that pulled — never the credential.
type Secret struct {
	Namespace      string `json:"namespace"`
	Name           string `json:"name"`
	UID            string `json:"uid,omitempty"`
	CredentialHash string `json:"credentialHash,omitempty"`
}

func (s Secret) sameCoordinates(o Secret) bool {
	return s.Namespace == o.Namespace && s.Name == o.Name && s.UID == o.UID
}

func (s Secret) String() string { return s.Namespace + "/" + s.Name }

func compareSecrets(a, b Secret) int {
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name), cmp.Compare(a.UID, b.UID))
}

// Credentials are what pulled an image under one repository name:
// NodeWide when a pull needed no secret (the node's credential provider
// plugins, the runtime's own credentials, or none), else the secrets
// whose credentials pulled it. Neither: the pull's credentials are
// unknown (a pull the agent did not see end), which verification treats
// as no credentials at all.
type Credentials struct {
	NodeWide bool     `json:"nodeWide,omitempty"`
	Secrets  []Secret `json:"secrets,omitempty"`
}

// NodeWideCredentials are those of a pull without a secret.
func NodeWideCredentials() Credentials { return Credentials{NodeWide: true} }

// SecretCredentials are those of a pull with one secret's credential.
func SecretCredentials(s Secret) Credentials { return Credentials{Secrets: []Secret{s}} }

// Pulled is the record of an image the agent pulled (kubelet's
// ImagePulledRecord), by its id as the runtime reports it.
type Pulled struct {
	Version     int       `json:"version"`
	ImageRef    string    `json:"imageRef"`
	LastUpdated time.Time `json:"lastUpdated"`
	// Credentials are by repository (dockerauth.RepoToPull: the image
	// without tag or digest, docker.io/library/busybox for busybox): one
	// image id can be pulled under several names, by different pods.
	Credentials map[string]Credentials `json:"credentials,omitempty"`
}

// merge adds what pulled (or was found to give access to) the image under
// repo to the record and reports whether that changed it; nil creds
// (credentials unknown) change nothing but the record's existence. Once
// node-wide, a repository stays so; secrets are kept once per
// coordinates, the newest hash winning, sorted.
func (p *Pulled) merge(repo string, creds *Credentials) bool {
	if creds == nil || !creds.NodeWide && len(creds.Secrets) == 0 {
		return false
	}
	if p.Credentials == nil {
		p.Credentials = map[string]Credentials{}
	}
	have, found := p.Credentials[repo]
	switch {
	case !found:
		p.Credentials[repo] = Credentials{NodeWide: creds.NodeWide, Secrets: sortedSecrets(creds.Secrets)}
		return true
	case have.NodeWide:
		return false
	case creds.NodeWide:
		p.Credentials[repo] = NodeWideCredentials()
		return true
	}
	merged, changed := mergeSecrets(have.Secrets, creds.Secrets)
	if changed {
		p.Credentials[repo] = Credentials{Secrets: merged}
	}
	return changed
}

func mergeSecrets(have, add []Secret) ([]Secret, bool) {
	out := slices.Clone(have)
	changed := false
	for _, s := range add {
		i := slices.IndexFunc(out, s.sameCoordinates)
		switch {
		case i < 0:
			out = append(out, s)
			changed = true
		case out[i].CredentialHash != s.CredentialHash:
			out[i].CredentialHash = s.CredentialHash
			changed = true
		}
	}
	return sortedSecrets(out), changed
}

func sortedSecrets(s []Secret) []Secret {
	out := slices.Clone(s)
	slices.SortFunc(out, compareSecrets)
	return out
}

func (p *Pulled) clone() *Pulled {
	out := *p
	out.Credentials = maps.Clone(p.Credentials)
	for repo, c := range out.Credentials {
		c.Secrets = slices.Clone(c.Secrets)
		out.Credentials[repo] = c
	}
	return &out
}

// Decision is whether a pod may use a present image as it is, or must
// pull it with its own credentials, and why.
type Decision struct {
	Pull bool
	// Why says, when Pull, why the image may not be used as it is
	// ("it was pulled with image pull secrets this pod does not have").
	Why string
	// learn is a secret of the pod the record should keep: it matched by
	// credential hash under other coordinates, or by coordinates with a
	// new hash.
	learn *Secret
}

// Reasons a present image must be pulled again.
const (
	whyNoRecord       = "the agent has no record of the credentials that pulled it"
	whyUnfinished     = "the agent did not see its pull end, so the credentials that pulled it are unknown"
	whyOtherName      = "the agent has no record of credentials that pulled it under this name"
	whyUnknownCreds   = "the credentials that pulled it are unknown"
	whyOtherSecrets   = "it was pulled with image pull secrets this pod does not have"
	whyUnreadable     = "its pull record is unreadable"
	whyPodPullRefsErr = "the pod's image pull secrets could not be read"
)

// decide is kubelet's MustAttemptImagePull on what the manager read:
// repo is the image's repository (the record's key), rec its pulled
// record (nil: none), pulledByAgent whether a record or an intent exists.
// The pod's secrets are read only when the record asks for them.
func decide(v Verification, image, repo string, pulledByAgent bool, rec *Pulled, podSecrets func() ([]Secret, error)) (Decision, error) {
	if !v.Required(image, pulledByAgent) {
		return Decision{}, nil
	}
	if rec == nil {
		if pulledByAgent {
			return Decision{Pull: true, Why: whyUnfinished}, nil
		}
		return Decision{Pull: true, Why: whyNoRecord}, nil
	}
	cached, ok := rec.Credentials[repo]
	switch {
	case !ok && len(rec.Credentials) == 0: // recovered from an intent
		return Decision{Pull: true, Why: whyUnknownCreds}, nil
	case !ok:
		return Decision{Pull: true, Why: whyOtherName}, nil
	case cached.NodeWide:
		return Decision{}, nil
	case len(cached.Secrets) == 0:
		return Decision{Pull: true, Why: whyUnknownCreds}, nil
	}
	secrets, err := podSecrets()
	if err != nil {
		return Decision{Pull: true, Why: whyPodPullRefsErr}, err
	}
	for _, mine := range secrets {
		for _, theirs := range cached.Secrets {
			hashMatch := theirs.CredentialHash != "" && mine.CredentialHash == theirs.CredentialHash
			coordsMatch := mine.sameCoordinates(theirs)
			if !hashMatch && !coordsMatch {
				continue
			}
			d := Decision{}
			if (!coordsMatch || !hashMatch) && mine.CredentialHash != "" && len(cached.Secrets) < matchWriteLimit {
				learned := mine
				d.learn = &learned
			}
			return d, nil
		}
	}
	return Decision{Pull: true, Why: whyOtherSecrets}, nil
}
