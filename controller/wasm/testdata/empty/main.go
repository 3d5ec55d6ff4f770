// Command empty exits at once: the fixed cost of a call.
package main

func main() {}
