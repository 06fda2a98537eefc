// Package assembly turns a validated pipeline config into running parts:
// it holds the operator table (table.go), the one place that maps an
// operator type to the package implementing it, and loads each operator
// through its row.
package assembly
