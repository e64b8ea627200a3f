// Package viewer is Keel's web run viewer: a page, a style sheet and three
// small JavaScript modules (app.js, operations.js for operations and
// settling, workspace.js for the run's workspace), embedded in the binary (go:embed) and served by
// the API's own handler (internal/api mounts [Handler]), so `keel dev`
// serves it at / and the api function serves it on AWS. Nothing is fetched
// at run time and there is no build step: the files under assets/ are the
// files served.
//
// The page holds no privilege of its own. It talks to the same /v1 API as
// the CLI, with the bearer token the person enters once; the token is kept
// in the tab's sessionStorage and sent only in the Authorization header,
// never in a URL. The live event stream is read with fetch() (EventSource
// cannot send headers) and resumed with Last-Event-ID after a reconnect.
// An approval's decision carries the args_hash the page showed, so a
// changed action is refused by the API (409 args_hash_mismatch) and the
// page says so.
//
// Every run shows its operations (id, tool, status, destination, the
// contract its intent was recorded under, external id, attempts). A
// needs_human run shows the story `keel explain` tells and a settle form
// per operation only a person can answer for (happened with the
// destination's id and an optional result, did not happen, give up; a
// reason always), sent to the same endpoint as `keel settle`. Text that
// came from a model, a tool or a destination goes into the page as text
// nodes only, with bidi and invisible format characters and controls shown
// as \uXXXX escapes.
//
// A run whose agent has a workspace shows its version per checkpoint
// (files, size, version hash); a person browses the tree of a chosen
// checkpoint and downloads a file, saved only once its sha256 matches the
// manifest's. Paths and names are the model's text: shown as text, put in
// URLs only through encodeURIComponent, symlinks listed and never followed.
//
// The assets are public: they contain no data. Every response carries a
// Content-Security-Policy that allows only this origin's own scripts,
// styles and connections.
package viewer
