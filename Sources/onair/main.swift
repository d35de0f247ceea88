import Foundation
import Appliance

exit(Runner.main(Array(CommandLine.arguments.dropFirst())))
