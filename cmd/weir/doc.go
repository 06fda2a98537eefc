// Command weir runs streaming pipelines defined in YAML, whose user functions
// are WebAssembly plugins.
//
// Exit codes:
//
//	0  the pipeline finished: its input ended, or it was stopped by SIGINT
//	   or SIGTERM and drained what it had read
//	1  the pipeline failed while running
//	2  the command line is wrong (unknown command, flag or argument count)
//	3  the pipeline file is invalid; nothing ran
//	4  a plugin could not be built, compiled, validated or initialised;
//	   nothing ran
//	130 a second SIGINT or SIGTERM forced an exit without draining
//
// Records that fail never change the exit code: they go to the dead-letter
// output, and the counts are logged at exit.
package main
