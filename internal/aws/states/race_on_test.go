//go:build race

package states

const raceEnabled = true
