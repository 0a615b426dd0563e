// Package pullrecords is the agent's "ensure secret pulled images"
// (KEP-2535, kubelet's image pull manager, pkg/kubelet/images/pullmanager):
// it records which credentials pulled each image, and decides whether a
// pod may use an image already on the node or must pull it with its own
// credentials first.
//
// Records (Manager, files.go) live in a directory only root can enter
// (the agent's <root>/pullrecords, 0700; files 0600, written atomically
// with store.SaveJSON):
//
//   - intents/<sha256 of the image>.json, written before every pull and
//     removed once the last pull of that image under way ended (kubelet's
//     ImagePullIntent): an intent left by a crash says the agent pulled
//     the image with credentials it never recorded;
//   - pulled/<sha256 of the image id>.json, written after a pull
//     succeeded (kubelet's ImagePulledRecord): for each repository the
//     image was pulled as, the credentials that pulled it — node-wide
//     (no secret: the node's credential provider plugins, the runtime's
//     own credentials, or none) or the image pull secrets, each by its
//     coordinates (namespace, name, uid) and a keyed hash of the
//     credential that pulled. The hash is made by the caller (the agent
//     uses the sources store's key, sourcestore.Store.Digest): no
//     credential is ever stored here.
//
// The decision (decide, kubelet's MustAttemptImagePull) first asks the
// policy (Verification: kubelet's imagePullCredentialsVerificationPolicy
// and preloadedImagesVerificationAllowlist) whether the image needs
// verifying at all; then an image pulled node-wide may be used by every
// pod; one pulled with secrets by a pod presenting one of those secrets
// (same coordinates, or a credential with the same hash — such a match is
// added to the record); anything else, and an image the records say
// nothing sure of, must be pulled with the pod's credentials.
//
// Recover (at the agent's start) turns the intents of images the runtime
// holds into records with credentials unknown; Prune (after each image
// garbage collection, and at start) drops the records of images the
// runtime no longer has, unless written since it listed them.
package pullrecords
