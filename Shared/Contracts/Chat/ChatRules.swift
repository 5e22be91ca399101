import Foundation
import Wire

public enum ChatRules {
    public static let text = 1...4_000
    public static let messagesDefaultLimit = 50
}
