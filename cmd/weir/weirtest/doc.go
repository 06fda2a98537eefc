// Package weirtest runs the real weir binary, built from this checkout, as a
// user would: for the command's own tests and for every example's test.
//
// The binary is built once per test process. Functions here are safe for
// concurrent use by parallel tests.
package weirtest
