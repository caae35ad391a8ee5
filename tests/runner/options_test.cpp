#include "kernels/runner/options.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using ess::runner::Command;
using ess::runner::config_fields;
using ess::runner::OptionsError;
using ess::runner::OverlapMode;
using ess::runner::parse_command_line;
using ess::runner::TransferPath;
using Args = std::vector<std::string>;

namespace {

// The DeepSeek-V3.2-Exp shape and a small workload, every required option given.
Args full() {
  return {"--layers", "4", "--hidden", "7168", "--q-lora", "1536", "--kv-lora", "512", "--heads", "128",
          "--qk-nope", "128", "--qk-rope", "64", "--v-head", "128", "--indexer-heads", "64", "--indexer-dim",
          "128", "--top-k", "2048", "--ffn", "18432", "--vocab", "129280", "--batch", "8", "--context",
          "32768", "--steps", "4", "--pool-entries", "6554", "--eviction", "lru", "--overlap", "da",
          "--transfer", "gather", "--access", "a.esstrace", "--out", "t.json"};
}

Args with(Args args, const std::string& option, const std::string& value) {
  for (std::size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == option) {
      args[i + 1] = value;
      return args;
    }
  }
  args.push_back(option);
  args.push_back(value);
  return args;
}

Args without(Args args, const std::string& option) {
  for (std::size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == option) {
      args.erase(args.begin() + static_cast<std::ptrdiff_t>(i), args.begin() + static_cast<std::ptrdiff_t>(i) + 2);
      break;
    }
  }
  return args;
}

std::string error_of(const Args& args) {
  try {
    (void)parse_command_line(args);
  } catch (const OptionsError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("a full command line parses every value and fills the defaults") {
  const Command c = parse_command_line(full());
  REQUIRE(c.action == Command::Action::run);
  const auto& o = c.options;
  CHECK(o.layers == 4);
  CHECK(o.hidden == 7168);
  CHECK(o.q_lora == 1536);
  CHECK(o.kv_lora == 512);
  CHECK(o.heads == 128);
  CHECK(o.qk_nope == 128);
  CHECK(o.qk_rope == 64);
  CHECK(o.v_head == 128);
  CHECK(o.indexer_heads == 64);
  CHECK(o.indexer_dim == 128);
  CHECK(o.top_k == 2048);
  CHECK(o.ffn == 18432);
  CHECK(o.vocab == 129280);
  CHECK(o.batch == 8);
  CHECK(o.context == 32768);
  CHECK(o.steps == 4);
  CHECK(o.pool_entries == 6554);
  CHECK(o.eviction == "lru");
  CHECK(o.overlap == OverlapMode::da);
  CHECK(o.transfer == TransferPath::gather);
  CHECK(o.access == "a.esstrace");
  CHECK(o.out == "t.json");
  // Defaults from the usage: --warmup-steps 2, --pinned-recent 0, --heat-decay 0.9 (the heat
  // policy's declared default, as the simulator's cache.heat_decay), --device 0.
  CHECK(o.warmup_steps == 2);
  CHECK(o.pinned_recent == 0);
  CHECK(o.eviction_params.of(ess::heat_eviction_params()[0]) == 0.9);
  CHECK(o.eviction_params.given().size() == 1);  // every declared parameter gets its default
  CHECK(o.device == 0);
  CHECK_FALSE(o.self_test);
  CHECK_FALSE(o.scenario_sha256.has_value());
}

TEST_CASE("name=value is the same as name value") {
  Args args = without(full(), "--batch");
  args.push_back("--batch=16");
  args.push_back("--heat-decay=0.25");
  args.push_back("--eviction=heat");
  args = without(args, "--eviction");
  const auto o = parse_command_line(args).options;
  CHECK(o.batch == 16);
  CHECK(o.eviction_params.of(ess::heat_eviction_params()[0]) == 0.25);
  CHECK(o.eviction == "heat");
}

TEST_CASE("choices map to their enums") {
  CHECK(parse_command_line(with(full(), "--overlap", "serial")).options.overlap == OverlapMode::serial);
  CHECK(parse_command_line(with(full(), "--transfer", "copy")).options.transfer == TransferPath::copy);
  CHECK(parse_command_line(with(full(), "--eviction", "fifo")).options.eviction == "fifo");
}

TEST_CASE("a missing required option is named") {
  CHECK(error_of(without(full(), "--batch")) == "missing required option --batch; see --help");
  CHECK(error_of(without(full(), "--access")) == "missing required option --access; see --help");
}

TEST_CASE("an unknown option suggests the nearest name") {
  CHECK(error_of(with(full(), "--bacth", "8")) == "unknown option --bacth (did you mean --batch?); see --help");
  CHECK(error_of(with(full(), "--frobnicate", "1")) == "unknown option --frobnicate; see --help");
}

TEST_CASE("integers are checked for syntax and range") {
  CHECK(error_of(with(full(), "--batch", "8x")) == "--batch: expected an integer in [1, 4096], got '8x'");
  CHECK(error_of(with(full(), "--batch", "")) == "--batch: expected an integer in [1, 4096], got ''");
  CHECK(error_of(with(full(), "--batch", "0")) == "--batch: 0 is outside [1, 4096]");
  CHECK(error_of(with(full(), "--pinned-recent", "-1")) == "--pinned-recent: -1 is outside [0, 2147483647]");
}

TEST_CASE("the heat decay must be a number above 0 and at most 1") {
  CHECK(error_of(with(full(), "--heat-decay", "0")) == "--heat-decay: 0 is outside (0, 1]");
  CHECK(error_of(with(full(), "--heat-decay", "1.5")) == "--heat-decay: 1.5 is outside (0, 1]");
  CHECK(error_of(with(full(), "--heat-decay", "warm")) == "--heat-decay: expected a number in (0, 1], got 'warm'");
  CHECK(parse_command_line(with(full(), "--heat-decay", "1")).options.eviction_params.of(ess::heat_eviction_params()[0]) == 1.0);
}

TEST_CASE("unknown choices list the accepted ones, and dba is refused by name") {
  CHECK(error_of(with(full(), "--eviction", "random")) ==
        "--eviction: unknown value 'random' (expected one of: lru, fifo, heat)");
  CHECK(error_of(with(full(), "--overlap", "dba")) ==
        "--overlap: unknown value 'dba' (expected one of: serial, da); ess-runner does not implement dba");
  CHECK(error_of(with(full(), "--transfer", "dma")) == "--transfer: unknown value 'dma' (expected one of: gather, copy)");
}

TEST_CASE("malformed command lines are refused") {
  Args twice = full();
  twice.push_back("--steps");
  twice.push_back("5");
  CHECK(error_of(twice) == "--steps given twice");
  Args dangling = full();
  dangling.push_back("--device");
  CHECK(error_of(dangling) == "--device needs a value");
  CHECK(error_of(with(without(full(), "--out"), "--access", "--out")) == "--access needs a value, got the option --out");
  Args positional = full();
  positional.push_back("extra");
  CHECK(error_of(positional) == "unexpected argument 'extra': options are written --name value; see --help");
  Args flag = full();
  flag.push_back("--self-test=yes");
  CHECK(error_of(flag) == "--self-test takes no value, got 'yes'");
  CHECK(error_of(with(full(), "--out", "")) == "--out: expected a file name, got an empty value");
}

TEST_CASE("the scenario digest must be 64 hexadecimal digits") {
  const std::string digest(64, 'a');
  CHECK(parse_command_line(with(full(), "--scenario-sha256", digest)).options.scenario_sha256 == digest);
  CHECK(error_of(with(full(), "--scenario-sha256", "abc")) ==
        "--scenario-sha256: expected 64 hexadecimal digits, got 'abc' (3 characters)");
  CHECK(error_of(with(full(), "--scenario-sha256", std::string(63, 'a') + "g")).find("expected 64 hexadecimal") !=
        std::string::npos);
}

TEST_CASE("shapes the kernels do not support are refused with the reason") {
  CHECK(error_of(with(full(), "--kv-lora", "256")).rfind("--kv-lora 256: ess-runner supports only 512", 0) == 0);
  CHECK(error_of(with(full(), "--qk-rope", "32")).rfind("--qk-rope 32: ess-runner supports only 64", 0) == 0);
  CHECK(error_of(with(full(), "--indexer-heads", "32")).rfind("--indexer-heads 32: ess-runner supports only 64", 0) == 0);
  CHECK(error_of(with(full(), "--indexer-dim", "64")).rfind("--indexer-dim 64: ess-runner supports only 128", 0) == 0);
  CHECK(error_of(with(full(), "--heads", "100")) ==
        "--heads 100: must be a multiple of 32 (sparse_mla runs 32 heads per block)");
  CHECK(error_of(with(full(), "--hidden", "7170")) ==
        "--hidden 7170: must be a multiple of 8 (rows are read in 16-byte vectors of bf16)");
  CHECK(error_of(with(full(), "--vocab", "129281")) ==
        "--vocab 129281: must be a multiple of 4 (sampling reads the logits as float4)");
}

TEST_CASE("the context must leave room for the warm-up steps") {
  // Warm-up step -2 runs at context - 2 tokens: context 2 leaves 0.
  CHECK(error_of(with(full(), "--context", "2")) ==
        "--context 2 must exceed --warmup-steps 2 (warm-up step -w runs at context - w tokens, which must be >= 1)");
  CHECK(parse_command_line(with(full(), "--context", "3")).options.context == 3);
}

TEST_CASE("latent row ids must fit 32 bits") {
  // 61 x 4096 x (10,000,000 + 4) = 249,856 x 10,000,004 = 2,498,560,999,424, far above 2^31 - 1.
  Args big = with(with(with(full(), "--layers", "61"), "--batch", "4096"), "--context", "10000000");
  CHECK(error_of(big) == "--layers x --batch x (--context + --steps) = 2498560999424 latent rows exceed ess-runner's "
                         "32-bit row ids (at most 2^31 - 1)");
  // 4 x 16 x (33554428 + 4) = 2^31 exactly: one too many; context 33554427 gives 2^31 - 64.
  CHECK(error_of(with(with(full(), "--batch", "16"), "--context", "33554428")).find("exceed") != std::string::npos);
  CHECK(parse_command_line(with(with(full(), "--batch", "16"), "--context", "33554427")).options.context == 33554427);
}

TEST_CASE("self-test needs no other option") {
  const Command c = parse_command_line({"--self-test"});
  CHECK(c.action == Command::Action::run);
  CHECK(c.options.self_test);
  CHECK(parse_command_line({"--self-test", "--device", "1"}).options.device == 1);
  // Values given are still checked.
  CHECK(error_of({"--self-test", "--device", "x"}) == "--device: expected an integer in [0, 1023], got 'x'");
}

TEST_CASE("help and version win over everything") {
  CHECK(parse_command_line({"--batch", "x", "--help"}).action == Command::Action::help);
  CHECK(parse_command_line({"-h"}).action == Command::Action::help);
  CHECK(parse_command_line({"--nonsense", "--version"}).action == Command::Action::version);
  const std::string usage = ess::runner::usage_text();
  CHECK(usage.find("--pool-entries N") != std::string::npos);
  CHECK(usage.find("(default 0.9)") != std::string::npos);
}

TEST_CASE("the config object lists every option by name with JSON values") {
  auto o = parse_command_line(with(full(), "--eviction", "heat")).options;
  const auto fields = config_fields(o);
  REQUIRE(fields.size() == 28);
  CHECK(fields[0] == std::pair<std::string, std::string>{"layers", "4"});
  CHECK(fields[2] == std::pair<std::string, std::string>{"q-lora", "1536"});
  CHECK(fields[16] == std::pair<std::string, std::string>{"warmup-steps", "2"});
  CHECK(fields[19] == std::pair<std::string, std::string>{"eviction", "\"heat\""});
  CHECK(fields[20] == std::pair<std::string, std::string>{"heat-decay", "0.90000000000000002"});
  CHECK(fields[21] == std::pair<std::string, std::string>{"overlap", "\"da\""});
  CHECK(fields[22] == std::pair<std::string, std::string>{"transfer", "\"gather\""});
  CHECK(fields[23] == std::pair<std::string, std::string>{"access", "\"a.esstrace\""});
  CHECK(fields[24] == std::pair<std::string, std::string>{"scenario-sha256", "null"});
  CHECK(fields[25] == std::pair<std::string, std::string>{"out", "\"t.json\""});
  CHECK(fields[26] == std::pair<std::string, std::string>{"device", "0"});
  CHECK(fields[27] == std::pair<std::string, std::string>{"self-test", "false"});
  o.scenario_sha256 = std::string(64, 'f');
  CHECK(config_fields(o)[24].second == "\"" + std::string(64, 'f') + "\"");
}
