module cup.test/wasmcontrollers

go 1.26
