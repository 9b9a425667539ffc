// Package scripts tests the release scripts of hack/ and the Makefile targets around them on
// throwaway git repositories; it has no code of its own.
package scripts
