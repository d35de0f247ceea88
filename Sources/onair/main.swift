import Appliance
import System

ThisProcess.exit(Runner.main(Array(CommandLine.arguments.dropFirst())))
