//go:build race

package extract

// raceEnabled lets the heaviest pathological tests use a smaller input cap under
// the race detector, which slows this CPU-bound code down about tenfold.
const raceEnabled = true
