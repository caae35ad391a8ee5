# Thin wrapper for the README's two commands; everything real lives in CMake and .ci/.
PRESET ?= release
BUILD  := build/$(PRESET)
SCENARIO ?= scenarios/dsv32-baseline-32k.json

.PHONY: build run test asan bench clean

build:
	cmake --preset $(PRESET)
	cmake --build --preset $(PRESET)

# The main job on a bundled scenario: simulate it, print the summary, write results and trace.
run: build
	./$(BUILD)/ess-sim run $(SCENARIO) -o out/$(notdir $(basename $(SCENARIO)))

# Simulator speed (a benchmark, not a test): wall time per step and activities per second.
bench: build
	./$(BUILD)/ess-sim bench scenarios/dsv32-baseline-128k.json

test: build
	ctest --preset $(PRESET)

asan:
	$(MAKE) test PRESET=asan-ubsan

clean:
	rm -rf build
