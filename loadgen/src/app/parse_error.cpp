#include "parse_error.hpp"

#include <algorithm>
#include <cstddef>

#include <fmt/format.h>

namespace llmload::app {
namespace {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// The deepest subcommand the parse entered: the one whose options an unknown one was meant as.
const CLI::App* parsed_command(const CLI::App* app) {
  for (;;) {
    const auto subs = app->get_subcommands();
    if (subs.empty()) return app;
    app = subs.front();
  }
}

std::vector<std::string> long_names(const CLI::App* app) {
  std::vector<std::string> names;
  for (const CLI::Option* o : app->get_options()) {
    if (o->get_group().empty()) continue;  // hidden: not offered
    for (const auto& n : o->get_lnames()) names.push_back(n);
  }
  return names;
}

// The top app's commands, as a user types them.
std::vector<std::string> command_names(const CLI::App* app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app->get_subcommands([](const CLI::App*) { return true; })) {
    names.push_back(sub->get_name());
  }
  return names;
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// No command was entered: none typed, or a word that is none of them ("llmload runn").
std::string command_error(const CLI::App* app) {
  const std::vector<std::string> commands = command_names(app);
  std::string typed;
  std::string option;
  for (const auto& arg : app->remaining(true)) {
    if (!arg.empty() && arg[0] != '-') {
      typed = arg;
      break;
    }
    if (option.empty()) option = arg;
  }
  if (!option.empty()) {  // "llmload --concurrency 2": its value is not a command
    return fmt::format("llmload: error: unknown option '{}' before a command; a command's options come after it: "
                       "llmload <command> {}\nThe commands are {}; run `llmload --help` for what each does.\n",
                       option, option, join(commands));
  }
  if (typed.empty()) {
    return fmt::format("llmload: error: a command is required: {}\nRun `llmload --help` for what each does.\n",
                       join(commands));
  }
  const std::string near = nearest_option(typed, commands);
  const std::string hint = near.empty() ? "" : fmt::format(" (did you mean '{}'?)", near.substr(2));
  return fmt::format("llmload: error: unknown command '{}'{}; the commands are {}\nRun `llmload --help` for what "
                     "each does.\n",
                     typed, hint, join(commands));
}

}  // namespace

std::string nearest_option(const std::string& typed, const std::vector<std::string>& known) {
  std::string name = typed.substr(typed.find_first_not_of('-') == std::string::npos ? typed.size()
                                                                                        : typed.find_first_not_of('-'));
  name = name.substr(0, name.find('='));  // --concurency=2
  if (name.empty()) return "";
  std::string best;
  std::size_t best_d = 0;
  for (const auto& k : known) {
    const std::size_t d = edit_distance(name, k);
    if (best.empty() || d < best_d) {
      best = k;
      best_d = d;
    }
  }
  // A slip: a letter or two (three in a long name) off.
  const std::size_t allowed = name.size() >= 12 ? 3 : name.size() >= 5 ? 2 : 1;
  return !best.empty() && best_d <= allowed ? "--" + best : "";
}

std::string parse_error_message(const CLI::App* app, const CLI::Error& e) {
  const std::string help = "Run with --help for more information.\n";
  if (app->get_parent() == nullptr && app->get_subcommands().empty() &&
      dynamic_cast<const CLI::RequiredError*>(&e) != nullptr) {
    return command_error(app);
  }
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) != nullptr) {
    // CLI11 says "--concurrency: 1 required  missing" for a flag at the end without its value.
    const std::string what = e.what();
    const auto colon = what.find(": ");
    if (colon != std::string::npos && what.find("required", colon) != std::string::npos &&
        what.find("missing", colon) != std::string::npos) {
      return fmt::format("llmload: error: {} needs a value\n{}", what.substr(0, colon), help);
    }
    // "--concurrency: At Most 1 required but received 2": a flag given twice.
    const auto received = what.find("received ");
    if (colon != std::string::npos && what.find("At Most 1 required", colon) != std::string::npos &&
        received != std::string::npos) {
      return fmt::format("llmload: error: {} was given {} times: give it once\n{}", what.substr(0, colon),
                         what.substr(received + 9), help);
    }
  }
  if (dynamic_cast<const CLI::ExtrasError*>(&e) == nullptr) return fmt::format("llmload: error: {}\n{}", e.what(), help);
  const CLI::App* command = parsed_command(app);
  const std::vector<std::string> known = long_names(command);
  std::vector<std::string> lines;
  bool after_unknown_option = false;
  for (const auto& arg : app->remaining(true)) {
    if (arg.size() > 1 && arg[0] == '-') {
      const std::string near = nearest_option(arg, known);
      if (!near.empty() && arg.rfind(near, 0) == 0 && (arg.size() == near.size() || arg[near.size()] == '=')) {
        // The command's own option, typed before the command ("llmload --concurrency 2 run").
        lines.push_back(fmt::format("option '{}' comes after the command: llmload{} {} ...", near,
                                    command == app ? "" : " " + command->get_name(), near));
      } else {
        lines.push_back(near.empty() ? fmt::format("unknown option '{}'", arg)
                                     : fmt::format("unknown option '{}' (did you mean '{}'?)", arg, near));
      }
      after_unknown_option = true;
    } else if (!after_unknown_option) {
      lines.push_back(fmt::format("unexpected argument '{}'", arg));
    } else {
      after_unknown_option = false;  // the unknown option's value, most likely: said with it
    }
  }
  if (lines.empty()) return fmt::format("llmload: error: {}\n{}", e.what(), help);
  const std::string where = command == app ? std::string() : " " + command->get_name();
  std::string out;
  for (const auto& l : lines) out += fmt::format("llmload{}: error: {}\n", where, l);
  return out + fmt::format("Run `llmload{} --help` for the options.\n", where);
}

}  // namespace llmload::app
