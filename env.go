package keel

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// EnvVars describes a program's own configuration in environment
// variables under one prefix (RESEARCH_, TRIAGE_): the names it reads and
// the names that moved. [EnvVars.Check] refuses any other variable with
// that prefix, the way Keel itself refuses a KEEL_* variable it does not
// read, so a misspelled or renamed setting stops the program at start
// with an error naming it, instead of being silently ignored.
//
// Check the environment where the program reads its configuration,
// before it builds its agents:
//
//	keel.MainFunc(func() ([]keel.Agent, error) {
//		env := keel.EnvVars{Prefix: "SHOP_", Names: []string{"SHOP_DB_URL", "SHOP_TIMEOUT"},
//			Moved: map[string]string{"SHOP_DATABASE": "SHOP_DB_URL"}}
//		if err := env.Check(os.Environ()); err != nil {
//			return nil, err
//		}
//		...
//	})
//
// Values are the program's to parse; Check never reads or shows one.
type EnvVars struct {
	// Prefix is what every variable of the program starts with, such as
	// "SHOP_". It must not be "KEEL_": those are Keel's, checked by Keel.
	Prefix string
	// Names are the variables the program reads, each with Prefix.
	Names []string
	// Moved maps a name the program once read to where its setting went
	// (another variable, or a sentence saying what replaced it).
	Moved map[string]string
}

// Check returns an error naming every variable of environ (os.Environ's
// NAME=value form) that starts with Prefix and is not one of Names — with
// where it went when it is in Moved — or nil when there is none.
func (e EnvVars) Check(environ []string) error {
	if e.Prefix == "" || strings.HasPrefix(e.Prefix, "KEEL_") {
		return errors.New("keel.EnvVars: Prefix must be set and must not be KEEL_ (Keel checks its own variables)")
	}
	var bad []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, e.Prefix) || slices.Contains(e.Names, name) {
			continue
		}
		if to, ok := e.Moved[name]; ok {
			bad = append(bad, fmt.Sprintf("%s is no longer read: it moved to %s", name, to))
		} else {
			bad = append(bad, fmt.Sprintf("%s is not one of %s", name, strings.Join(e.Names, ", ")))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	slices.Sort(bad)
	return fmt.Errorf("unknown configuration: %s; unset it, or it would be ignored", strings.Join(bad, "; "))
}
