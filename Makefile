# Thin wrapper for the README's two commands; everything real lives in CMake and .ci/.
PRESET ?= release
BUILD  := build/$(PRESET)
SCENARIO ?= scenarios/dsv32-baseline-32k.json

.PHONY: build run test asan clean

build:
	cmake --preset $(PRESET)
	cmake --build --preset $(PRESET)

# The main job on a bundled scenario (until `ess-sim run` exists: validate and print it resolved).
run: build
	./$(BUILD)/ess-sim check $(SCENARIO)

test: build
	ctest --preset $(PRESET)

asan:
	$(MAKE) test PRESET=asan-ubsan

clean:
	rm -rf build
