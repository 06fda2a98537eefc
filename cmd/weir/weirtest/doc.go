// Package weirtest runs the real weir binary, built from this checkout, as a
// user would: for the command's own tests and for every example's test.
//
// PollUntil is the one polling helper of every test in the module, the
// host's and the Kafka connector's included; the package imports only the
// standard library, so any test may import it.
//
// The binary is built once per test process. Functions here are safe for
// concurrent use by parallel tests.
package weirtest
