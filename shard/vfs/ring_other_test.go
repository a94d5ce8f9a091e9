//go:build !linux

package vfs

func ringImpls() []impl { return nil }
